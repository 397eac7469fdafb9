package quickhelp

import (
	"embed"
	"os"
	"slices"
	"strings"
)

// texts holds one file per command: its path in the command tree joined by
// Sep, with Ext ("modwright.txt", "modwright_apply.txt").
//
//go:embed text
var texts embed.FS

const (
	// Root is the name of the root command, the first word of every path.
	Root = "modwright"
	// Sep joins the words of a command's path into its file name.
	Sep = "_"
	// Ext ends every file name.
	Ext = ".txt"
	// Dir is the directory of the texts, relative to this package.
	Dir = "text"
)

func init() {
	if text, ok := Answer(os.Args[1:]); ok {
		_, _ = os.Stdout.WriteString(text)
		os.Exit(0)
	}
}

// FileName is the name of the file holding the help of the command at path
// (the root's name first).
func FileName(path []string) string { return strings.Join(path, Sep) + Ext }

// Answer returns the help a command line asks for, when it is exactly a help
// request of a command whose text is here: the root alone; a command's words
// with one -h, --help or --help=true among them; or "help" followed by a
// command's words. Anything else (another flag, an argument, an unknown
// command) is not answered, and cobra sees it.
func Answer(args []string) (string, bool) {
	words := make([]string, 0, len(args)+1)
	words = append(words, Root)
	flags := 0
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help" || a == "--help=true":
			flags++
		case isWord(a):
			words = append(words, a)
		default:
			return "", false
		}
	}
	switch {
	case flags > 1:
		return "", false
	case flags == 0 && len(words) > 1 && words[1] == "help":
		// "help apply" is "apply --help" ("help --help" is the help
		// command's own).
		words = slices.Delete(words, 1, 2)
	case flags == 0 && len(args) > 0:
		return "", false
	}
	data, err := texts.ReadFile(Dir + "/" + FileName(words))
	if err != nil {
		return "", false
	}
	return string(data), true
}

// isWord reports whether a is spelled as a command's name: lower-case
// letters, digits and inner dashes.
func isWord(a string) bool {
	if a == "" || a[0] == '-' {
		return false
	}
	for _, r := range a {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}
