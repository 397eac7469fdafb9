package value

//go:generate go run ./interngen intern.txt intern_gen.go
