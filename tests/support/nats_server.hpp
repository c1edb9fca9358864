#pragma once
// Real NATS JetStream servers for tests: Debian's nats-server started as a child process on
// 127.0.0.1 (free ports), its store in a temporary folder under /tmp that is removed with the
// fixture. A node is ready when its monitoring endpoint /healthz answers 200, which in 2.9
// also means that JetStream is enabled and (in a cluster) that a metadata leader is known:
// an event to wait for, not a sleep. Nodes can be stopped (SIGTERM), killed (SIGKILL) and
// started again on the same ports and store.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.hpp"

namespace tidemark::testing {

// The nats-server executable, or empty when it is not installed.
std::string nats_server_program();

// The loopback ports of one node, chosen once so that a restarted node keeps them.
struct NatsNodePorts {
  unsigned short client;
  unsigned short route;
  unsigned short monitor;
  static NatsNodePorts free();
};

// One node. Constructed through NatsServer (a single server) or NatsCluster (routed nodes).
class NatsNode {
 public:
  // `routes` is the routes list of the cluster {} block (empty for a single server: no
  // cluster), `extra_config` is appended to the configuration file as it is (e.g. a
  // mappings {} block).
  NatsNode(std::string name, std::filesystem::path folder, NatsNodePorts ports, std::string routes,
           std::string extra_config);
  ~NatsNode();
  NatsNode(const NatsNode&) = delete;
  NatsNode& operator=(const NatsNode&) = delete;

  const std::string& name() const { return name_; }
  // nats://127.0.0.1:PORT, the same across restarts.
  std::string url() const;
  unsigned short port() const { return ports_.client; }
  unsigned short monitor_port() const { return ports_.monitor; }
  const std::filesystem::path& store_dir() const { return store_dir_; }

  // Starts the process (again) and returns at once; wait_ready() waits for it.
  void start();
  // Waits until /healthz answers 200; throws with the server's output after `timeout`.
  void wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // SIGTERM and wait for the exit (a clean shutdown).
  void stop();
  // SIGKILL and reap it: the crash of a server.
  void kill();
  bool running();
  // GET on the monitoring port (/jsz, /varz, …): the body, or "" when it did not answer 200.
  std::string monitor(const std::string& target) const;

 private:
  void write_config() const;

  std::string name_;
  std::filesystem::path folder_;
  std::filesystem::path store_dir_;
  std::filesystem::path config_file_;
  NatsNodePorts ports_;
  std::string routes_;
  std::string extra_config_;
  std::unique_ptr<Process> process_;
  std::string last_output_;  // what a stopped or killed process printed, for failure messages
};

// A single JetStream server, started and ready when constructed.
class NatsServer {
 public:
  // `extra_config` is appended to the server configuration file as it is.
  explicit NatsServer(const std::string& extra_config = "");
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  std::string url() const { return node_->url(); }
  NatsNode& node() { return *node_; }

 private:
  std::filesystem::path folder_;
  std::unique_ptr<NatsNode> node_;
};

// A JetStream cluster of `nodes` servers routed on loopback, each with its own store; ready
// (every node healthy, a metadata leader elected) when constructed.
class NatsCluster {
 public:
  explicit NatsCluster(int nodes = 3, const std::string& extra_config = "");
  ~NatsCluster();
  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  std::vector<std::string> urls() const;
  std::size_t size() const { return nodes_.size(); }
  NatsNode& node(std::size_t index) { return *nodes_.at(index); }
  // The node whose server_name is `name` (as /jsz or a stream's cluster info names it).
  NatsNode& node(const std::string& name);
  // The node the running nodes agree leads the JetStream metadata (its /jsz meta_cluster),
  // waiting up to `timeout` for them to agree on one; throws after it.
  NatsNode& meta_leader(std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  std::filesystem::path folder_;
  std::vector<std::unique_ptr<NatsNode>> nodes_;
};

}  // namespace tidemark::testing
