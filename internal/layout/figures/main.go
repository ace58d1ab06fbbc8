// Command figures prints the layout's measures of the shipped packages:
// lines, the largest file loop and the module's packages each imports.
//
//	go run ./internal/layout/figures [-files] [patterns]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/natsaudit/nats-version-auditor/internal/layout"
)

func main() {
	files := flag.Bool("files", false, "print each loop's files and each file's uses")
	why := flag.Bool("why", false, "with -files, print the names each use is of")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	const module = "github.com/natsaudit/nats-version-auditor"
	pkgs, err := layout.Load(".", module, patterns...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range pkgs {
		var imports []string
		for _, i := range p.Imports {
			imports = append(imports, strings.TrimPrefix(i, module+"/"))
		}
		fmt.Printf("%-45s %5d lines %3d files  loop %2d  -> %s\n", strings.TrimPrefix(p.Path, module+"/"), p.Lines, len(p.Files), p.Largest(), strings.Join(imports, " "))
		if *files {
			for _, l := range p.Loops {
				fmt.Printf("    loop: %s\n", strings.Join(l, " "))
			}
			for _, f := range p.Files {
				fmt.Printf("    %s -> %s\n", f, strings.Join(p.Uses[f], " "))
				if *why {
					for _, to := range p.Uses[f] {
						fmt.Printf("        %s: %s\n", to, strings.Join(p.Names[f+" -> "+to], " "))
					}
				}
			}
		}
	}
}
