package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// Action is what a change does to its file.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	Remove Action = "remove"
	None   Action = "none"
)

// What a change is about.
const (
	WhatServer       = "mcp server"
	WhatInstructions = "instructions"
)

// BackupSuffix names the copy of a file as it was before hub first changed it.
const BackupSuffix = ".hub-backup"

// Change is one file install or uninstall creates, changes or removes.
type Change struct {
	Client string `json:"client"`
	What   string `json:"what"` // WhatServer or WhatInstructions
	Path   string `json:"path"`
	Action Action `json:"action"`
	Detail string `json:"detail"`         // what changes, in a few words
	Text   string `json:"text,omitempty"` // the entry exactly as written (install) or as taken out (uninstall)
	// Backup is where the file as it was is copied before the first change
	// hub makes to it; empty when there is nothing to back up, or a copy
	// is there already.
	Backup string `json:"backup,omitempty"`

	edit  func(src []byte) ([]byte, error) // the new text; nil removes the file
	check func(out []byte) error           // a last look at the new text before it is written
	holds func(src []byte) bool            // the text has hub's entry or block in it
	mode  os.FileMode                      // of a new file
	owned bool                             // hub's own file: no backup, its folder goes with it
	undo  bool                             // an uninstall: a missing file is left missing
}

// Plan is every change for some clients, worked out before anything is written.
type Plan struct {
	Changes []Change `json:"changes"`
}

// Pending reports whether applying the plan would change a file.
func (p *Plan) Pending() bool {
	for _, c := range p.Changes {
		if c.Action != None {
			return true
		}
	}
	return false
}

// PlanInstall works out what installing en for clients changes: each
// client's MCP entry and its delegation skill. It reads the files and
// writes nothing; a file it cannot edit safely (malformed, or hub's entry
// in a form it does not edit) fails the whole plan.
func PlanInstall(e Env, en Entry, clients []Client) (*Plan, error) {
	p := &Plan{}
	for _, c := range clients {
		c := c
		server := Change{Client: c.Name, What: WhatServer, Path: c.ConfigFile(e), mode: c.newFileMode(),
			edit: func(src []byte) ([]byte, error) { return c.setEntry(src, en) },
			check: func(out []byte) error {
				got, err := c.ReadEntry(out)
				if err != nil {
					return err
				}
				if got == nil || got.Command != en.Command || !reflect.DeepEqual(got.Args, en.Args) || !sameEnv(got.Env, en.Env) {
					return fmt.Errorf("the edited file does not read back as hub's entry")
				}
				return nil
			}}
		server.holds = c.holdsEntry
		instr := Change{Client: c.Name, What: WhatInstructions, Path: c.InstructionsFile(e), mode: 0o644, owned: c.ownsInstructions(), holds: holdsBlock}
		if instr.owned {
			instr.edit = func([]byte) ([]byte, error) { return []byte(Skill()), nil }
		} else {
			instr.edit = func(src []byte) ([]byte, error) { return setBlock(src, Instructions()) }
			instr.check = func(out []byte) error {
				if body, err := blockBody(out); err != nil || body != Instructions() {
					return fmt.Errorf("the edited file does not read back with hub's block")
				}
				return nil
			}
		}
		for _, ch := range []Change{server, instr} {
			planned, err := plan(ch)
			if err != nil {
				return nil, err
			}
			describeInstall(c, &planned)
			p.Changes = append(p.Changes, planned)
		}
	}
	return p, nil
}

// PlanUninstall works out what uninstalling clients changes: exactly what
// install adds (the entry, the skill file, the block) and nothing else.
// A config left holding nothing is removed; backups are kept.
func PlanUninstall(e Env, clients []Client) (*Plan, error) {
	p := &Plan{}
	for _, c := range clients {
		c := c
		path := c.ConfigFile(e)
		server := Change{Client: c.Name, What: WhatServer, Path: path, undo: true,
			edit: func(src []byte) ([]byte, error) { return c.removeEntry(src, prior(path)) },
			check: func(out []byte) error {
				if out == nil {
					return nil
				}
				if en, err := c.ReadEntry(out); err != nil || en != nil {
					return fmt.Errorf("the edited file still reads as holding hub's entry")
				}
				return nil
			}}
		server.holds = c.holdsEntry
		instr := Change{Client: c.Name, What: WhatInstructions, Path: c.InstructionsFile(e), undo: true, owned: c.ownsInstructions(), holds: holdsBlock}
		if instr.owned {
			instr.edit = func([]byte) ([]byte, error) { return nil, nil }
		} else {
			instr.edit = func(src []byte) ([]byte, error) { return removeBlock(src, prior(instr.Path)) }
		}
		for _, ch := range []Change{server, instr} {
			planned, err := plan(ch)
			if err != nil {
				return nil, err
			}
			describeUninstall(c, &planned)
			p.Changes = append(p.Changes, planned)
		}
	}
	return p, nil
}

// plan reads the change's file and works out its action.
func plan(ch Change) (Change, error) {
	src, exists, err := readFile(ch.Path)
	if err != nil {
		return ch, err
	}
	if !exists && ch.undo {
		ch.Action = None
		return ch, nil
	}
	out, err := ch.edit(src)
	if err != nil {
		return ch, fmt.Errorf("%s: %w", ch.Path, err)
	}
	switch {
	case !exists:
		ch.Action = Create
	case out == nil:
		ch.Action = Remove
	case bytes.Equal(out, src):
		ch.Action = None
	default:
		ch.Action = Update
	}
	if ch.Action != None && ch.check != nil {
		if err := ch.check(out); err != nil {
			return ch, fmt.Errorf("%s: %v; nothing was written (this is a bug in hub install: please report it)", ch.Path, err)
		}
	}
	if exists && ch.Action == Update && needsBackup(ch, src) {
		ch.Backup = ch.Path + BackupSuffix
	}
	if ch.What == WhatServer {
		ch.Text = entryText(ch, src, out)
	}
	return ch, nil
}

// entryText is hub's entry as it reads in the new text (or, when it is
// taken out, in the old one).
func entryText(ch Change, src, out []byte) string {
	c, _ := Lookup(ch.Client)
	text := out
	if ch.undo {
		text = src
	}
	if text == nil {
		return ""
	}
	if c[0].Name == "codex" {
		d, err := parseTOML(text)
		if err != nil {
			return ""
		}
		main, subs, err := d.locate(codexTable)
		if err != nil || main == nil {
			return ""
		}
		var b strings.Builder
		for _, t := range append([]*tomlTable{main}, subs...) {
			b.Write(text[t.start:t.end])
		}
		return strings.TrimRight(b.String(), "\n")
	}
	root, err := parseJSON(text, c[0].syntax())
	if err != nil || root == nil {
		return ""
	}
	cont, _ := root.member(c[0].jsonContainer())
	if cont == nil || cont.value.kind != '{' {
		return ""
	}
	m, _ := cont.value.member(ServerName)
	if m == nil {
		return ""
	}
	ind, _ := lineIndent(text, m.keyStart)
	lines := strings.Split(string(text[m.keyStart:m.value.end]), "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.TrimPrefix(lines[i], ind)
	}
	return strings.Join(lines, "\n")
}

func describeInstall(c Client, ch *Change) {
	switch {
	case ch.What == WhatServer && ch.Action == Create:
		ch.Detail = "new file with hub's MCP server, " + c.entryPath()
	case ch.What == WhatServer && ch.Action == Update:
		ch.Detail = "set hub's MCP server, " + c.entryPath() + "; every other line stays as it is"
	case ch.What == WhatServer:
		ch.Detail = c.entryPath() + " is already set"
	case ch.owned && ch.Action == None:
		ch.Detail = "the " + SkillName + " skill is current"
	case ch.owned:
		ch.Detail = fmt.Sprintf("the %s skill (%d lines)", SkillName, strings.Count(Skill(), "\n"))
	case ch.Action == None:
		ch.Detail = "hub's block is current"
	case ch.Action == Create:
		ch.Detail = fmt.Sprintf("new file with hub's delegation instructions (%d lines between %s and %s)", strings.Count(blockText(Instructions()), "\n"), blockBegin+" …", blockEnd)
	default:
		ch.Detail = fmt.Sprintf("set hub's delegation instructions (%d lines between %s and %s); the rest stays as it is", strings.Count(blockText(Instructions()), "\n"), blockBegin+" …", blockEnd)
	}
}

func describeUninstall(c Client, ch *Change) {
	switch {
	case ch.Action == None && ch.What == WhatServer:
		ch.Detail = "no " + c.entryPath()
	case ch.Action == None && ch.owned:
		ch.Detail = "no " + SkillName + " skill"
	case ch.Action == None:
		ch.Detail = "no hub block"
	case ch.What == WhatServer && ch.Action == Remove:
		ch.Detail = "remove the file: hub's entry was all it held"
	case ch.What == WhatServer:
		ch.Detail = "take out " + c.entryPath() + "; every other line stays as it is"
	case ch.owned:
		ch.Detail = "remove the " + SkillName + " skill"
	case ch.Action == Remove:
		ch.Detail = "remove the file: hub's block was all it held"
	default:
		ch.Detail = "take out hub's block; the rest stays as it is"
	}
}

func sameEnv(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// Apply makes the plan's changes. Each file is read again and edited as
// it is now (a client may have rewritten it since the plan was made),
// backed up once before its first change, and written atomically with its
// mode kept. It stops at the first failure; the changes made before it
// stand, and applying the plan again finishes the job.
func (p *Plan) Apply() error {
	for _, ch := range p.Changes {
		if ch.Action == None {
			continue
		}
		if err := apply(ch); err != nil {
			return err
		}
	}
	return nil
}

func apply(ch Change) error {
	src, exists, err := readFile(ch.Path)
	if err != nil {
		return err
	}
	if !exists && ch.undo {
		return nil
	}
	out, err := ch.edit(src)
	if err != nil {
		return fmt.Errorf("%s: %w", ch.Path, err)
	}
	if exists && out != nil && bytes.Equal(out, src) {
		return nil
	}
	if out != nil && ch.check != nil {
		if err := ch.check(out); err != nil {
			return fmt.Errorf("%s: %v; nothing was written", ch.Path, err)
		}
	}
	target := ch.Path
	if exists {
		if target, err = filepath.EvalSymlinks(ch.Path); err != nil {
			return err
		}
		if out != nil && needsBackup(ch, src) {
			if err := backup(target, ch.Path+BackupSuffix, src); err != nil {
				return err
			}
		}
	}
	if out == nil {
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if ch.owned {
			_ = os.Remove(filepath.Dir(target)) // the skill's folder, once empty
		}
		return nil
	}
	mode := ch.mode
	if exists {
		fi, err := os.Stat(target)
		if err != nil {
			return err
		}
		mode = fi.Mode().Perm()
	}
	return writeAtomic(target, out, mode)
}

// prior returns the file as it was before hub first changed it (its
// backup), or nil when there is no backup: hub made the file.
func prior(path string) []byte {
	b, exists, err := readFile(path + BackupSuffix)
	if err != nil || !exists {
		return nil
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// readFile returns a file's bytes, and false when there is no file.
func readFile(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return b, true, nil
}

// needsBackup reports whether a change to a file that holds src is the
// one to back the file up before: the change that puts hub into a file
// that was there without it (a file hub made, or one hub is already in,
// is not the original), when no backup is there yet. hub's own files get
// none.
func needsBackup(ch Change, src []byte) bool {
	if ch.owned || (ch.holds != nil && ch.holds(src)) {
		return false
	}
	_, err := os.Lstat(ch.Path + BackupSuffix)
	return errors.Is(err, fs.ErrNotExist)
}

// backup copies the file as it is to dst: the file as it was before hub
// first changed it.
func backup(path, dst string, src []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return writeAtomic(dst, src, fi.Mode().Perm())
}

// writeAtomic writes data to path (making its folder) so a reader sees the
// old file or the new one, never half of one.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}
