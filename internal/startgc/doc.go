// Package startgc keeps the garbage collector off while the binary's
// packages initialize, and turns it back on when main starts.
//
// Go initializes every linked package before main runs, whatever the command
// (the Kubernetes libraries and the three embedded engines allocate about 8 MB
// doing it); with the collector on, it runs several times over memory that is
// all still live, a third of the CPU a short command such as `--help` or a
// one-object `apply` spends. The language initializes packages in the order
// of their import paths once their own imports are done, so this package,
// which imports only the runtime, starts before the Kubernetes libraries,
// OPA and the operator's libraries (whose paths sort after it).
//
// It owns nothing else and must import nothing of the project. Only a main
// package imports it, and calls Restore first thing.
package startgc
