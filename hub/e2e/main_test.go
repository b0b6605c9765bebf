package e2e

import (
	"os"
	"testing"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }
