// Package devserver runs a Temporal server in the process, on SQLite, for
// trying remote queues on one machine and for hub's tests: `hub-temporal
// dev-server`. With a database file its workflows survive a restart (the
// in-memory test server's do not). It is not a server for a team; run
// Temporal itself for that.
package devserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// Options say where the server keeps its state and listens.
type Options struct {
	// DB is the SQLite file ("" keeps everything in memory, gone at Stop).
	DB string
	// Port is the frontend's port on 127.0.0.1 (0: a free one).
	Port int
	// Namespaces are made if missing (default: "default").
	Namespaces []string
	// Log is the server's logger (default: none).
	Log log.Logger
}

// Server is a running dev server.
type Server struct {
	srv  temporal.Server
	addr string
}

// Start starts a server and returns once its frontend answers.
func Start(o Options) (*Server, error) {
	if len(o.Namespaces) == 0 {
		o.Namespaces = []string{"default"}
	}
	if o.Log == nil {
		o.Log = log.NewNoopLogger()
	}
	if o.Port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		o.Port = p
	}
	db := config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if o.DB == "" {
		db.ConnectAttributes["mode"], db.ConnectAttributes["cache"] = "memory", "shared"
		db.DatabaseName = "hub-dev-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(o.Port)
	} else {
		db.ConnectAttributes["mode"] = "rwc"
		db.DatabaseName = o.DB
		if err := os.MkdirAll(filepath.Dir(o.DB), 0o700); err != nil {
			return nil, err
		}
	}
	// A database in memory gets its schema from the SQLite plugin itself.
	if _, err := os.Stat(o.DB); o.DB != "" && os.IsNotExist(err) {
		if err := sqlite.SetupSchema(&db); err != nil {
			return nil, fmt.Errorf("set up the dev server's database: %w", err)
		}
	}
	cfg, err := serverConfig(o.Port, db)
	if err != nil {
		return nil, err
	}
	var nss []*sqlite.NamespaceConfig
	for _, n := range o.Namespaces {
		nc, err := sqlite.NewNamespaceConfig(cfg.ClusterMetadata.CurrentClusterName, n, false, nil)
		if err != nil {
			return nil, err
		}
		nss = append(nss, nc)
	}
	if err := sqlite.CreateNamespaces(&db, nss...); err != nil {
		return nil, fmt.Errorf("make the dev server's namespaces: %w", err)
	}
	authz, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claims, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, o.Log)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(o.Log),
		temporal.WithAuthorizer(authz),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claims }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{}),
	)
	if err != nil {
		return nil, fmt.Errorf("make the dev server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start the dev server: %w", err)
	}
	return &Server{srv: srv, addr: cfg.PublicClient.HostPort}, nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return s.addr }

// Stop stops the server.
func (s *Server) Stop() error { return s.srv.Stop() }

// serverConfig is one of each service on loopback, one history shard, and
// the database for both stores.
func serverConfig(port int, db config.SQL) (*config.Config, error) {
	const host = "127.0.0.1"
	svc := func(grpc int) (config.Service, error) {
		var err error
		if grpc == 0 {
			if grpc, err = freePort(); err != nil {
				return config.Service{}, err
			}
		}
		member, err := freePort()
		if err != nil {
			return config.Service{}, err
		}
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: member, BindOnLocalHost: true}}, nil
	}
	services := map[string]config.Service{}
	for name, p := range map[string]int{"frontend": port, "history": 0, "matching": 0, "worker": 0} {
		s, err := svc(p)
		if err != nil {
			return nil, err
		}
		services[name] = s
	}
	pprof, err := freePort()
	if err != nil {
		return nil, err
	}
	front := fmt.Sprintf("%s:%d", host, port)
	cfg := &config.Config{}
	// One process holds every service, so there is no peer to wait for
	// when it joins: a server started again on its old database would
	// otherwise wait for its own dead members of before (about 30s more
	// before its first workflow task, measured).
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 2 * time.Second, BroadcastAddress: host}
	cfg.Global.PProf = config.PProf{Port: pprof}
	cfg.Persistence = config.Persistence{DefaultStore: "sqlite", VisibilityStore: "sqlite", NumHistoryShards: 1,
		DataStores: map[string]config.DataStore{"sqlite": {SQL: &db}}}
	cfg.ClusterMetadata = &cluster.Config{FailoverVersionIncrement: 10, MasterClusterName: "active", CurrentClusterName: "active",
		ClusterInformation: map[string]cluster.ClusterInformation{"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: front}}}
	cfg.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	cfg.Services = services
	cfg.Archival = config.Archival{History: config.HistoryArchival{State: "disabled"}, Visibility: config.VisibilityArchival{State: "disabled"}}
	cfg.NamespaceDefaults = config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
		History: config.HistoryArchivalNamespaceDefaults{State: "disabled"}, Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"}}}
	cfg.PublicClient = config.PublicClient{HostPort: front}
	return cfg, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
