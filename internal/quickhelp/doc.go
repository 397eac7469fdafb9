// Package quickhelp answers a request for help (`modwright --help`,
// `modwright apply -h`, `modwright help apply`, `modwright` alone) before
// the rest of the binary initializes, and exits.
//
// Go initializes every linked package before main runs, whatever the
// command: the Kubernetes libraries, OPA, CEL and CUE cost about 25 ms of
// CPU on every start, and there is no lazy initialization of a linked
// package. The language initializes packages in the order of their import
// paths once their own imports are done, so this package, which imports only
// the standard library, runs its init after the standard library's and
// before any of the engines (their paths sort after it, or they import
// packages whose paths do): a help request costs what the Go runtime does.
//
// The texts are the command tree's own help, rendered by cobra and written
// into text/ by internal/cli's TestQuickHelp with -update; that test fails
// when a command's help and its text here differ, and a command line that is
// not exactly a help request of a known command is left to cobra.
//
// It owns the texts and the recognition of a help request. It must import
// nothing but the standard library (test/arch checks it), and only a main
// package imports it.
package quickhelp
