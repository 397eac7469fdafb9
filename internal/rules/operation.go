package rules

// Operation is an admission operation, spelled as the API server sends it.
type Operation string

// Admission operations.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)
