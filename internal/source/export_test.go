package source

// DecodeBlockYAML is decodeBlockYAML, for the external tests.
var DecodeBlockYAML = decodeBlockYAML
