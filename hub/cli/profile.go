package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
)

type profileSetOptions struct {
	p           protocol.ProfileInfo
	keyStdin    bool
	makeDefault bool
}

func newProfileCmd(ios *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Manage the built-in worker's model profiles (provider, endpoint, model, key)",
	}
	cmd.AddCommand(newProfileSetCmd(ios), newProfileListCmd(ios), newProfileRemoveCmd(ios), newProfileDefaultCmd(ios), newProfileLoginCmd(ios))
	return cmd
}

func newProfileSetCmd(ios *IO) *cobra.Command {
	o := &profileSetOptions{}
	cmd := &cobra.Command{
		Use:   "set NAME --provider P --model M [flags]",
		Short: "Add or replace a profile (the first one becomes the default)",
		Long: `Add or replace a model profile for the built-in worker.

Providers: openai (any OpenAI-compatible endpoint: OpenAI, gateways, vLLM, LM Studio; set --base-url),
anthropic, ollama (a local Ollama through its /v1 endpoint; no key), scripted (plays a script file),
copilot and chatgpt (a GitHub Copilot or ChatGPT subscription: no key; log in with hub profile login NAME).
The key is read from the environment variable --key-env (default OPENAI_API_KEY or ANTHROPIC_API_KEY),
or from hub's env file; --key-stdin stores it there (mode 0600). Keys are never put in a worker's environment.`,
		Args: exactArgs(1, "a profile name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.p.Name = args[0]
			return runProfileSet(cmd, ios, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.p.Provider, "provider", "", "openai, anthropic, ollama, scripted, copilot or chatgpt")
	f.StringVar(&o.p.BaseURL, "base-url", "", "endpoint, e.g. https://openrouter.ai/api/v1 (default: the provider's)")
	f.StringVar(&o.p.Model, "model", "", "model name")
	f.StringSliceVar(&o.p.Fallbacks, "fallback", nil, "model to try when the model keeps failing (repeat for more)")
	f.StringVar(&o.p.KeyEnv, "key-env", "", "environment variable that holds the key")
	f.IntVar(&o.p.MaxTokens, "max-tokens", 0, "cap on each answer in tokens (default 8192)")
	f.IntVar(&o.p.ContextWindow, "context-window", 0, "the model's context in tokens (default: from the price table, else 32000)")
	f.StringVar(&o.p.Script, "script", "", "scripted provider: the script file")
	f.StringVar(&o.p.LoginURL, "login-url", "", "copilot or chatgpt: the login server (default https://github.com or https://auth.openai.com; a GitHub Enterprise host)")
	f.BoolVar(&o.keyStdin, "key-stdin", false, "read the key from stdin and store it in hub's env file (mode 0600)")
	f.BoolVar(&o.makeDefault, "default", false, "make it the default profile")
	return cmd
}

func runProfileSet(cmd *cobra.Command, ios *IO, o *profileSetOptions) error {
	params := protocol.ProfileSetParams{Profile: o.p, MakeDefault: o.makeDefault}
	if o.keyStdin {
		line, err := bufio.NewReader(ios.In).ReadString('\n')
		if err != nil && err != io.EOF {
			return err
		}
		params.Key = strings.TrimSpace(line)
		if params.Key == "" {
			return &usageError{fmt.Errorf("--key-stdin read no key; pipe it in: printf %%s \"$KEY\" | hub profile set %s --key-stdin …", o.p.Name)}
		}
	}
	res, err := ios.daemon().ProfileSet(cmd.Context(), params)
	return answer(ios, res, err, func(res *protocol.ProfileInfo) {
		ios.printf("%s\n", profileLine(*res))
	})
}

func newProfileListCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the profiles (keys are never shown, only where they come from)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().ProfileList(cmd.Context(), protocol.Empty{})
			if err != nil {
				return err
			}
			return printProfiles(ios, *res)
		},
	}
}

func printProfiles(ios *IO, res protocol.ProfileListResult) error {
	if ios.JSON {
		return ios.printJSON(res)
	}
	for _, p := range res.Profiles {
		ios.printf("%s\n", profileLine(p))
	}
	if res.Default == "" {
		ios.printf("no default profile: builtin jobs must name one (hub profile default NAME)\n")
	}
	return nil
}

func profileLine(p protocol.ProfileInfo) string {
	mark := " "
	if p.Default {
		mark = "*"
	}
	parts := []string{p.Provider}
	if p.Model != "" {
		parts = append(parts, p.Model)
	}
	if len(p.Fallbacks) > 0 {
		parts = append(parts, "then "+strings.Join(p.Fallbacks, ", "))
	}
	if p.BaseURL != "" {
		parts = append(parts, p.BaseURL)
	}
	if p.Script != "" {
		parts = append(parts, "script "+p.Script)
	}
	switch {
	case p.Key == "login":
		parts = append(parts, "logged in")
	case p.Key == "missing" && p.KeyEnv == "":
		parts = append(parts, "needs login (hub profile login "+p.Name+")")
	case p.Key == "missing":
		parts = append(parts, "key missing ("+p.KeyEnv+")")
	case p.Key != "" && p.Key != "not needed":
		parts = append(parts, "key from "+p.Key)
	}
	if p.BuiltIn {
		parts = append(parts, "built in")
	}
	return fmt.Sprintf("%s %-12s %s", mark, p.Name, strings.Join(parts, " · "))
}

func newProfileRemoveCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a profile (its key stays in the env file; its login's tokens are removed)",
		Args:  exactArgs(1, "a profile name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().ProfileRemove(cmd.Context(), protocol.ProfileNameParams{Name: args[0]})
			if err != nil {
				return err
			}
			return printProfiles(ios, *res)
		},
	}
}

func newProfileDefaultCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "default NAME",
		Short: "Make NAME the profile builtin jobs use when they name none",
		Args:  exactArgs(1, "a profile name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().ProfileDefault(cmd.Context(), protocol.ProfileNameParams{Name: args[0]})
			if err != nil {
				return err
			}
			return printProfiles(ios, *res)
		},
	}
}

func newProviderCmd(ios *IO) *cobra.Command {
	cmd := &cobra.Command{Use: "provider", Short: "Check the model providers the profiles use"}
	cmd.AddCommand(&cobra.Command{
		Use:   "status [PROFILE]",
		Short: "Which profiles have a key and a reachable endpoint (no model call, nothing spent)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p protocol.ProfileNameParams
			if len(args) == 1 {
				p.Name = args[0]
			}
			res, err := ios.daemon().ProviderStatus(cmd.Context(), p)
			if err != nil {
				return err
			}
			bad := 0
			for _, s := range res.Profiles {
				if !s.Usable {
					bad++
				}
			}
			if ios.JSON {
				if err := ios.printJSON(res); err != nil {
					return err
				}
				if bad > 0 {
					return withCode(ExitError, nil)
				}
				return nil
			}
			for _, s := range res.Profiles {
				state := "ok     "
				if !s.Usable {
					state = "not ok "
				}
				ios.printf("%s %-12s %s\n", state, s.Profile.Name, s.Detail)
			}
			if bad > 0 {
				return withCode(ExitError, nil)
			}
			return nil
		},
	})
	return cmd
}

func newProfileLoginCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "login NAME",
		Short: "Log a copilot or chatgpt profile in: shows a code to enter in the browser, then waits",
		Long: `Log a copilot (GitHub Copilot) or chatgpt (ChatGPT Plus/Pro) profile in by the OAuth device flow.

hub prints an address and a code: open the address in a browser, sign in, and enter the code.
The daemon polls the provider and stores the tokens in hub's config directory (logins/NAME.json,
mode 0600); they are refreshed before they expire and never shown. A second login of the same
profile replaces one that still waits. Exit status 0 once logged in, 1 when the login was denied,
expired or failed (the message says what to do next). With --json it prints two JSON lines: the
login as it starts (verification_uri, user_code) and as it ends (state, detail).`,
		Args: exactArgs(1, "a profile name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			// --json: one line as the login starts (address and code), one as it ends.
			enc := json.NewEncoder(ios.Out)
			enc.SetEscapeHTML(false)
			res, err := ios.daemon().ProfileLogin(cmd.Context(), protocol.ProfileLoginParams{Name: name})
			if err != nil {
				return err
			}
			if ios.JSON {
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				ios.printf("To log profile %s in, open %s in a browser and enter the code\n\n    %s\n\n(it expires in %s). Waiting for the login…\n",
					name, res.VerificationURI, res.UserCode, time.Duration(res.ExpiresInS)*time.Second)
			}
			end, err := ios.daemon().ProfileLogin(cmd.Context(), protocol.ProfileLoginParams{Name: name, Wait: true})
			if err != nil {
				return fmt.Errorf("lost the daemon while waiting for the login (%w); run hub profile login %s again", err, name)
			}
			res = loginEnd(*res, *end)
			if ios.JSON {
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else if res.State == protocol.LoginDone {
				ios.printf("%s\n", res.Detail)
			}
			switch res.State {
			case protocol.LoginDone:
				return nil
			case protocol.LoginPending:
				return withCode(ExitPending, fmt.Errorf("the login still waits; see hub provider status %s", name))
			}
			return withCode(ExitError, fmt.Errorf("login %s: %s", res.State, res.Detail))
		},
	}
}

// loginEnd is a login's end over its start: what the end leaves out (the
// address, the code and their expiry, once the login ended) stays the
// start's, so the --json line as it ends names them too.
func loginEnd(start, end protocol.ProfileLoginResult) *protocol.ProfileLoginResult {
	if end.VerificationURI == "" {
		end.VerificationURI = start.VerificationURI
	}
	if end.UserCode == "" {
		end.UserCode = start.UserCode
	}
	if end.ExpiresInS == 0 {
		end.ExpiresInS = start.ExpiresInS
	}
	if end.Detail == "" {
		end.Detail = start.Detail
	}
	return &end
}
