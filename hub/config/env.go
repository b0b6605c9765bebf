package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// EnvSource says whose environment a HUB_* setting was read from, so an
// error about it points at what to fix.
type EnvSource string

const (
	// FromCommand is the environment of the hub command being run.
	FromCommand EnvSource = "this command's environment"
	// FromDaemon is the environment the daemon was started with: a client
	// that started it passed its own, and it keeps it for its whole life.
	FromDaemon EnvSource = "the environment the hub daemon was started with"
)

// setting is one knob of Settings: its key in config.json, its variable,
// and where it lives in a Settings.
type setting struct {
	key, env string
	unit     string              // what a value counts, for messages ("" for jobs and dollars)
	min      float64             // the least value allowed
	field    func(*Settings) any // *int or *float64
}

// settings lists every knob once; Load, CheckEnv and the errors derive from it.
var settings = []setting{
	{"max_running", "HUB_MAX_RUNNING", "", 1, func(s *Settings) any { return &s.MaxRunning }},
	{"monthly_cap_usd", "HUB_MONTHLY_CAP_USD", "", 0, func(s *Settings) any { return &s.MonthlyCapUSD }},
	{"default_max_usd", "HUB_DEFAULT_MAX_USD", "", 0, func(s *Settings) any { return &s.DefaultMaxUSD }},
	{"max_job_usd", "HUB_MAX_JOB_USD", "", 0, func(s *Settings) any { return &s.MaxJobUSD }},
	{"timeout_s", "HUB_TIMEOUT_S", " second", 1, func(s *Settings) any { return &s.TimeoutS }},
	{"verify_timeout_s", "HUB_VERIFY_TIMEOUT_S", " second", 1, func(s *Settings) any { return &s.VerifyTimeoutS }},
	{"setup_timeout_s", "HUB_SETUP_TIMEOUT_S", " second", 1, func(s *Settings) any { return &s.SetupTimeoutS }},
	{"ask_timeout_s", "HUB_ASK_TIMEOUT_S", " second", 1, func(s *Settings) any { return &s.AskTimeoutS }},
	{"stall_timeout_s", "HUB_STALL_TIMEOUT_S", " second", 1, func(s *Settings) any { return &s.StallTimeoutS }},
	{"job_retention_days", "HUB_JOB_RETENTION_DAYS", " day", 1, func(s *Settings) any { return &s.JobRetentionDays }},
	{"limit_processes", "HUB_LIMIT_PROCESSES", " process", 16, func(s *Settings) any { return &s.LimitProcesses }},
	{"limit_memory_mb", "HUB_LIMIT_MEMORY_MB", " MiB", 16, func(s *Settings) any { return &s.LimitMemoryMB }},
	{"limit_disk_mb", "HUB_LIMIT_DISK_MB", " MiB", 1, func(s *Settings) any { return &s.LimitDiskMB }},
	{"max_file_mb", "HUB_MAX_FILE_MB", " MiB", 1, func(s *Settings) any { return &s.MaxFileMB }},
}

// SettingError is a setting whose value hub cannot use, with where the
// value came from: a variable of an environment, or config.json.
type SettingError struct {
	Env    string    // the variable, when the value came from one
	Source EnvSource // whose environment it was in
	File   string    // config.json, when the value came from it
	Key    string    // the setting's key in config.json
	Value  string
	Reason string // "is not a whole number", "must be at least 1", …
}

func (e *SettingError) Error() string {
	if e.Env != "" {
		return fmt.Sprintf("%s=%q, set in %s, %s", e.Env, e.Value, e.Source, e.Reason)
	}
	return fmt.Sprintf("%s is %s in %s; it %s", e.Key, e.Value, e.File, e.Reason)
}

// Hint says what to change, and where.
func (e *SettingError) Hint() string {
	switch {
	case e.Env != "" && e.Source == FromDaemon:
		return fmt.Sprintf("fix or unset %s where the daemon was started (the shell or the agent client that ran the first hub command), "+
			"then run any hub command from an environment without it: the daemon refused to start, nothing else is affected", e.Env)
	case e.Env != "":
		return fmt.Sprintf("fix or unset %s (it overrides %s in config.json); nothing was started", e.Env, e.Key)
	}
	return fmt.Sprintf("fix %s in %s, or remove the key for its default", e.Key, e.File)
}

// applyEnv overrides s with the HUB_* variables set in the environment.
func applyEnv(s *Settings, src EnvSource) error {
	for _, k := range settings {
		v := os.Getenv(k.env)
		if v == "" {
			continue
		}
		bad := func(reason string) error {
			return &SettingError{Env: k.env, Source: src, Key: k.key, Value: v, Reason: reason}
		}
		switch dst := k.field(s).(type) {
		case *int:
			n, err := strconv.Atoi(v)
			if err != nil {
				return bad("is not a whole number")
			}
			*dst = n
		case *float64:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return bad("is not a number of dollars")
			}
			*dst = f
		}
	}
	return nil
}

// check refuses a value below its least, saying whether the variable or
// the file set it.
func check(s Settings, file string, src EnvSource) error {
	for _, k := range settings {
		var v float64
		var shown string
		switch x := k.field(&s).(type) {
		case *int:
			v, shown = float64(*x), strconv.Itoa(*x)
		case *float64:
			v, shown = *x, strconv.FormatFloat(*x, 'f', -1, 64)
		}
		if v >= k.min {
			continue
		}
		reason := fmt.Sprintf("must be at least %v%s", k.min, k.unit)
		if k.min == 0 {
			reason = "must not be negative"
		}
		if env := os.Getenv(k.env); env != "" {
			return &SettingError{Env: k.env, Source: src, Key: k.key, Value: env, Reason: reason}
		}
		return &SettingError{File: file, Key: k.key, Value: shown, Reason: reason}
	}
	return nil
}

// CheckEnv reads the HUB_* settings of this process's environment and
// checks them, naming the variable and src in the error. It returns the
// ones that are set, as the daemon reports them in initialize.
func CheckEnv(src EnvSource) (map[string]string, error) {
	s := Defaults()
	if err := applyEnv(&s, src); err != nil {
		return nil, err
	}
	if err := check(s, filepath.Join(ConfigDir(), "config.json"), src); err != nil {
		return nil, err
	}
	return EnvSettings(), nil
}

// EnvSettings returns the HUB_* settings set in this process's environment.
func EnvSettings() map[string]string {
	var out map[string]string
	for _, k := range settings {
		if v := os.Getenv(k.env); v != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[k.env] = v
		}
	}
	return out
}
