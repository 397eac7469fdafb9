//go:build !race

package gotemplate

const raceEnabled = false
