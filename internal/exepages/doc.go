// Package exepages gives back the pages of the process' own executable that
// only its start read.
//
// A Go binary that links the Kubernetes libraries and three embedded engines
// is over 100 MB; initializing its packages, reading its flags and compiling
// its rules touch pages all over it, and the kernel maps more around each
// touch (read-ahead from disk, fault-around from the page cache). Measured
// with `serve` and 1,000 rules, the process held 55-69 MB of the binary once
// ready, while ten seconds of serving flat out touched 6 MB of it (the pages'
// accessed bits): the rest was start-up's. Release asks the kernel to unmap
// the executable's read-only mappings (code, read-only data, the function
// tables): the pages stay in the page cache, marked cold, and the ones still
// used come back on their next touch by a minor fault.
//
// It never touches a writable mapping (the program's variables), a
// read-only one holding written pages (relocated data of a
// position-independent build, a debugger's breakpoints), nor any other
// file's. It owns reading /proc/self/smaps for that and knows nothing of
// the project. On other systems than Linux, Release does nothing.
package exepages
