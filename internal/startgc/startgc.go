package startgc

import "runtime/debug"

// percent is the setting the process started with (GOGC, or 100), put back
// by Restore. Written once, before main, then read once.
var percent = debug.SetGCPercent(-1)

// Restore turns the collector back on with the setting the process started
// with. Call it once, first thing in main.
func Restore() { debug.SetGCPercent(percent) }
