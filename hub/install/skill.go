package install

import (
	_ "embed"
	"strings"
)

// skill is the delegation skill: how a supervisor agent should use hub's
// tools. It is the one source of every copy: the skill file install
// writes for Claude Code, Gemini CLI and Qwen Code, the block it puts in
// Codex's and OpenCode's AGENTS.md,
// and skills/hub-delegate/SKILL.md of the Claude Code plugin in this
// repository (a test fails when that copy is stale).
//
//go:embed skill.md
var skill string

// SkillName is the skill's name, and its folder's.
const SkillName = "hub-delegate"

// Skill returns the skill file, front matter (name, description) included.
func Skill() string { return skill }

// Instructions returns the skill without its front matter, for an AGENTS.md.
func Instructions() string {
	body := skill
	if strings.HasPrefix(body, "---\n") {
		if end := strings.Index(body[4:], "\n---\n"); end >= 0 {
			body = body[4+end+5:]
		}
	}
	return strings.TrimLeft(body, "\n")
}
