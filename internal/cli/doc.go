// Package cli implements modwright's commands. Commands parse flags, read
// inputs through internal/source, evaluate through internal/engine and print;
// they hold no rule logic of their own.
package cli
