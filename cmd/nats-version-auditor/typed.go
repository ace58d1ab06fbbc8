package main

import (
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// shapesDocument reports whether the flag named name shapes the document of
// a run that failed: the format it is printed in, and the floor and the
// release it names as typed.
func shapesDocument(name string) bool { return name == "format" || name == "floor" || name == "to" }

// typedCommand returns the command args select, with the flags that shape
// its document (--format, --floor, --to) set as typed, wherever they stand:
// kingpin stops at the first token it refuses and sets nothing when any is
// refused, so the args are read here as kingpin reads them, to the end and
// past any error. A flag of the command typed before it (`--format json
// check`, which kingpin refuses) counts too. Without a command (`chek
// --format json`), the document is fallback's, the gate's. A value a flag
// refuses leaves the one before it, or the default.
func typedCommand(app *kingpin.Application, args []string, fallback *kingpin.CmdClause) string {
	m := app.Model()
	takesValue := map[string]bool{} // by long name, and by "-" and the short letter
	commands := map[string]*kingpin.CmdModel{}
	note := func(flags []*kingpin.FlagModel) {
		for _, f := range flags {
			takesValue[f.Name] = !f.IsBoolFlag()
			if f.Short != 0 {
				takesValue["-"+string(f.Short)] = !f.IsBoolFlag()
			}
		}
	}
	note(m.Flags)
	for _, c := range m.Commands {
		commands[c.Name] = c
		note(c.Flags)
	}
	var selected *kingpin.CmdModel
	type typed struct{ name, value string }
	var values []typed
	args = expandArgFiles(args)
	for i := 0; i < len(args); i++ {
		arg := args[i]
		// valueNext is the next arg when kingpin would take it as the value
		// of a flag: one that is no flag itself.
		valueNext := func() (string, bool) {
			if i+1 < len(args) && (args[i+1] == "-" || !strings.HasPrefix(args[i+1], "-")) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case arg == "--":
			// Only arguments from here on, which no command takes.
			i = len(args)
		case strings.HasPrefix(arg, "--"):
			name, value, ok := strings.Cut(arg[2:], "=")
			if !ok && takesValue[name] {
				value, ok = valueNext()
			}
			if ok && shapesDocument(name) {
				values = append(values, typed{name, value})
			}
		case strings.HasPrefix(arg, "-") && len(arg) == 2:
			if takesValue[arg] {
				valueNext()
			}
		case strings.HasPrefix(arg, "-"):
			// -sURL, a short flag and its value; or bool short flags.
		default:
			if selected == nil {
				selected = commands[arg]
			}
		}
	}
	if selected == nil {
		if fallback == nil {
			return ""
		}
		selected = fallback.Model()
	}
	for _, f := range selected.Flags {
		if shapesDocument(f.Name) && len(f.Default) > 0 {
			_ = f.Value.Set(f.Default[0])
		}
	}
	for _, v := range values {
		for _, f := range selected.Flags {
			if f.Name == v.name {
				_ = f.Value.Set(v.value) // a value it refuses leaves the one before
			}
		}
	}
	return selected.FullCommand
}

// expandArgFiles replaces each @FILE arg with the args the file holds, as
// kingpin does (one level: kingpin's own expansion of a file naming itself
// never ends); one it cannot read is left as it is (kingpin refuses it).
func expandArgFiles(args []string) []string {
	if !kingpin.EnableFileExpansion {
		return args
	}
	var out []string
	for i, arg := range args {
		if arg == "--" {
			return append(out, args[i:]...)
		}
		if file, ok := strings.CutPrefix(arg, "@"); ok {
			if expanded, err := kingpin.ExpandArgsFromFile(file); err == nil {
				out = append(out, expanded...)
				continue
			}
		}
		out = append(out, arg)
	}
	return out
}
