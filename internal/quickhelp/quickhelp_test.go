package quickhelp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnswer(t *testing.T) {
	text := func(path ...string) string {
		data, err := os.ReadFile(filepath.Join(Dir, FileName(path)))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	root, apply, help := text("modwright"), text("modwright", "apply"), text("modwright", "help")
	bash := text("modwright", "completion", "bash")
	tests := []struct {
		args []string
		want string // "" when cobra must see the command line
	}{
		{nil, root},
		{[]string{"--help"}, root},
		{[]string{"-h"}, root},
		{[]string{"--help=true"}, root},
		{[]string{"help"}, root},
		{[]string{"apply", "--help"}, apply},
		{[]string{"-h", "apply"}, apply},
		{[]string{"help", "apply"}, apply},
		{[]string{"help", "--help"}, help},
		{[]string{"help", "help"}, help},
		{[]string{"completion", "bash", "-h"}, bash},
		{[]string{"help", "completion", "bash"}, bash},

		{[]string{"apply"}, ""},                           // a command to run
		{[]string{"version"}, ""},                         // another
		{[]string{"--help=false"}, ""},                    // not a help request
		{[]string{"--version"}, ""},                       // another flag
		{[]string{"apply", "--rules", "r", "--help"}, ""}, // flags cobra must parse (and may refuse)
		{[]string{"apply", "extra", "--help"}, ""},        // an argument
		{[]string{"nosuch", "--help"}, ""},                // an unknown command: cobra's error
		{[]string{"help", "nosuch"}, ""},                  // cobra's "Unknown help topic"
		{[]string{"apply", "-h", "--help"}, ""},           // two help flags
		{[]string{"../modwright", "--help"}, ""},          // not a command's name
		{[]string{"Apply", "--help"}, ""},                 // cobra's names are case-sensitive
		{[]string{"--", "--help"}, ""},                    // "--" ends the flags
		{[]string{"apply", "help"}, ""},                   // apply with an argument
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, ok := Answer(tt.args)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Answer(%q) = %.40q, %v; want %.40q", tt.args, got, ok, tt.want)
			}
		})
	}
}
