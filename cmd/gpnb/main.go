// Command gpnb trains, solves, reproduces and reports iterative Gaussian
// processes with warm-started marginal-likelihood optimisation.
//
// Usage:
//
//	gpnb <command> [flags]
//
// Run "gpnb help" for the list of commands and "gpnb <command> --help" for
// each command's flags.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// command is one gpnb subcommand. Each lives in its own file and registers
// itself in an init function, so subcommands can be added independently.
type command struct {
	name  string
	short string // one line for "gpnb help"
	// run parses args with its own FlagSet and does the work. Output goes to
	// stdout, diagnostics to stderr. A returned error is printed once, and the
	// process exits non-zero.
	run func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("gpnb: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error already explained by printed usage (exit code 2).
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintf(w, "gpnb: warm-start marginal-likelihood optimisation for iterative Gaussian processes\n\n")
	fmt.Fprintf(w, "Usage:\n  gpnb <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].short)
	}
	fmt.Fprintf(w, "\nRun 'gpnb <command> --help' for a command's flags.\n")
}

func main() {
	setMemoryLimit()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// memoryLimitFraction is the share of physical memory the Go heap is held
// under when GOMEMLIMIT is not set.
const memoryLimitFraction = 0.9

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of physical
// memory unless GOMEMLIMIT says otherwise. Without one the collector lets
// garbage grow to the size of the live heap before it runs; with a dense
// kernel matrix of 13-16 GB (protein, keggdirected at --memory-budget 16GiB)
// that would exceed the machine's memory.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total := kernel.PhysicalMemory(); total > 0 {
		debug.SetMemoryLimit(int64(memoryLimitFraction * float64(total)))
	}
}

// run dispatches args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return exitCode(c.run([]string{"--help"}, stdout, stderr), stderr)
			}
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gpnb: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return exitCode(c.run(args[1:], stdout, stderr), stderr)
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "gpnb") {
		msg = "gpnb: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return 1
}

// newFlagSet returns a FlagSet that reports errors instead of exiting, with a
// usage text naming the command (printFlags).
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gpnb "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: gpnb %s %s\n\n", name, synopsis)
		printFlags(stderr, fs)
	}
	return fs
}

// flagGroup is a kind of shared flag, as the usage lists them.
type flagGroup struct {
	title string
	names func() []string // in the order listed
	// of reports whether f of fs belongs to the group (a command's own
	// flag may share a name).
	of func(fs *flag.FlagSet, f *flag.Flag) bool
}

// flagGroups are the shared flags, listed after a command's own.
var flagGroups = []flagGroup{
	{"Data", func() []string { return dataFlagNames }, func(fs *flag.FlagSet, f *flag.Flag) bool {
		return slices.Contains(dataFlagNames, f.Name) && fs.Lookup("drop-missing") != nil
	}},
	{"Run (gpnb.Config; see DESIGN.md)", func() []string { return runFlagNames(false) }, func(_ *flag.FlagSet, f *flag.Flag) bool {
		return isRunFlag(f) && slices.Contains(runFlagNames(false), f.Name)
	}},
	{"Solvers", func() []string { return runFlagNames(true) }, func(_ *flag.FlagSet, f *flag.Flag) bool {
		return isRunFlag(f) && slices.Contains(runFlagNames(true), f.Name)
	}},
	{"Backend", func() []string { return []string{"backend", "device"} }, func(fs *flag.FlagSet, f *flag.Flag) bool {
		return (f.Name == "backend" || f.Name == "device") && fs.Lookup("device") != nil
	}},
}

// isRunFlag reports whether f is one of runFlagTable's: their values are
// this package's types.
func isRunFlag(f *flag.Flag) bool {
	return reflect.TypeOf(f.Value).PkgPath() == reflect.TypeFor[runTarget]().PkgPath()
}

// usageWidth is the width the usage is wrapped to.
const usageWidth = 100

// printFlags writes fs's flags, one line each (wrapped where long): the
// flag with its default (--name=value), or the name of its value, then
// what it does. The command's own flags come first, then flagGroups.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.ContainsFunc(flagGroups, func(g flagGroup) bool { return g.of(fs, f) }) {
			own = append(own, f)
		}
	})
	printGroup(w, "Flags", own)
	for _, g := range flagGroups {
		var fl []*flag.Flag
		for _, n := range g.names() {
			if f := fs.Lookup(n); f != nil && g.of(fs, f) {
				fl = append(fl, f)
			}
		}
		printGroup(w, g.title, fl)
	}
}

// printGroup writes the flags under title, when there are any.
func printGroup(w io.Writer, title string, flags []*flag.Flag) {
	if len(flags) > 0 {
		fmt.Fprintf(w, "%s:\n", title)
	}
	for _, f := range flags {
		value, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		switch b, ok := f.Value.(interface{ IsBoolFlag() bool }); {
		case ok && b.IsBoolFlag():
			if f.DefValue != "false" {
				head += "=" + f.DefValue
			}
		case f.DefValue != "" && f.DefValue != "[]":
			head += "=" + f.DefValue
		default:
			head += " " + value
		}
		const col = 22
		if n := utf8.RuneCountInString(head); n < col-1 {
			head += strings.Repeat(" ", col-n)
		} else {
			head += "  "
		}
		fmt.Fprintln(w, wrap(head+usage, usageWidth, strings.Repeat(" ", col+2)))
	}
}

// wrap breaks s at spaces into lines of at most width runes, the later
// ones starting with indent.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Split(s, " ") {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case line+1+n > width && line > len(indent):
			b.WriteString("\n" + indent)
			line = utf8.RuneCountInString(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += n
	}
	return b.String()
}

// required prints that --name (with what it takes: "in DIR") is required,
// and the usage, and returns errUsage when value is empty.
func required(fs *flag.FlagSet, name, value string) error {
	if value == "" {
		fmt.Fprintf(fs.Output(), "%s: --%s is required\n", fs.Name(), name)
		fs.Usage()
		return errUsage
	}
	return nil
}

// parseFlags parses args. A bad value of a known flag is an error naming
// the flag and what to give (exit 1); an unknown flag or a malformed command
// line prints the usage (errUsage, exit 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		var value, name, why string
		if n, _ := fmt.Sscanf(err.Error(), "invalid value %q for flag -%s", &value, &name); n == 2 {
			name = strings.TrimSuffix(name, ":")
			_, why, _ = strings.Cut(err.Error(), ": ")
			return fmt.Errorf("--%s %q: %s (see gpnb %s --help)", name, value, why, strings.TrimPrefix(fs.Name(), "gpnb "))
		}
		if n, _ := fmt.Sscanf(err.Error(), "invalid boolean flag %s", &name); n == 1 {
			_, why, _ = strings.Cut(err.Error(), ": ")
			return fmt.Errorf("--%s: %s (see gpnb %s --help)", strings.TrimSuffix(name, ":"), why, strings.TrimPrefix(fs.Name(), "gpnb "))
		}
		fmt.Fprintf(out, "%s: %v\n", fs.Name(), err)
		fs.Usage()
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// writeJSON writes v as indented JSON to path; "-" means stdout and "" means
// nowhere. Files are written atomically (temp file + rename).
func writeJSON(path string, v any, stdout io.Writer) error {
	if path == "" {
		return nil
	}
	if path != "-" {
		return atomicfile.WriteJSON(path, v, true)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(b, '\n'))
	return err
}
