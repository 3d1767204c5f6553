package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
)

// CommandFlags is one command line (overseer start, overseer model list)
// with the flags its own flag set defines.
type CommandFlags struct {
	Path     string // "start", "model list"
	Synopsis string // the command's; the same for each of its verbs
	Flags    []*flag.Flag
}

// CommandFlagSets runs every command, and every verb of a command that has
// verbs, with -h and returns the flags its flag sets defined, sorted by
// path: what docs/cli.md is generated from and what the docs' commands
// are checked against.
func CommandFlagSets() ([]CommandFlags, error) {
	var made []*flag.FlagSet
	onNewFlags = func(fs *flag.FlagSet) { made = append(made, fs) }
	defer func() { onNewFlags = nil }()
	collect := func(path string, cmd Command, args ...string) (CommandFlags, error) {
		made = nil
		err := cmd.Run(context.Background(), append(args, "-h"), io.Discard)
		if err != nil && err != flag.ErrHelp {
			return CommandFlags{}, fmt.Errorf("overseer %s -h: %v", path, err)
		}
		cf := CommandFlags{Path: path, Synopsis: cmd.Synopsis()}
		seen := map[string]bool{}
		for _, fs := range made {
			fs.VisitAll(func(f *flag.Flag) {
				if !seen[f.Name] {
					seen[f.Name] = true
					cf.Flags = append(cf.Flags, f)
				}
			})
		}
		sort.Slice(cf.Flags, func(i, j int) bool { return cf.Flags[i].Name < cf.Flags[j].Name })
		return cf, nil
	}
	var all []CommandFlags
	for name, cmd := range Commands() {
		if sc, ok := cmd.(subcommander); ok {
			for _, verb := range sc.subcommandNames() {
				cf, err := collect(name+" "+verb, cmd, verb)
				if err != nil {
					return nil, err
				}
				all = append(all, cf)
			}
			continue
		}
		cf, err := collect(name, cmd)
		if err != nil {
			return nil, err
		}
		all = append(all, cf)
		if oc, ok := cmd.(optionalSubcommander); ok {
			for _, verb := range oc.optionalSubcommandNames() {
				cf, err := collect(name+" "+verb, cmd, verb)
				if err != nil {
					return nil, err
				}
				all = append(all, cf)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	return all, nil
}
