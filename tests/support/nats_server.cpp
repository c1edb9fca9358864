#include "tests/support/nats_server.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <boost/json.hpp>

#include "tests/support/http_client.hpp"

namespace tidemark::testing {
namespace fs = std::filesystem;

namespace {

fs::path make_temp_folder(const std::string& what) {
  std::string pattern = (fs::temp_directory_path() / ("tidemark-nats-" + what + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

}  // namespace

std::string nats_server_program() {
  std::string found = find_program("nats-server");
  if (found.empty() && ::access("/usr/sbin/nats-server", X_OK) == 0) found = "/usr/sbin/nats-server";
  return found;
}

NatsNodePorts NatsNodePorts::free() { return {free_port(), free_port(), free_port()}; }

NatsNode::NatsNode(std::string name, fs::path folder, NatsNodePorts ports, std::string routes,
                   std::string extra_config)
    : name_(std::move(name)),
      folder_(std::move(folder)),
      store_dir_(folder_ / "store"),
      config_file_(folder_ / "server.conf"),
      ports_(ports),
      routes_(std::move(routes)),
      extra_config_(std::move(extra_config)) {
  fs::create_directories(store_dir_);
}

NatsNode::~NatsNode() {
  if (process_ && process_->running()) kill();
}

std::string NatsNode::url() const { return "nats://127.0.0.1:" + std::to_string(ports_.client); }

void NatsNode::write_config() const {
  std::ofstream out(config_file_);
  out << "server_name: " << name_ << "\n"
      << "listen: 127.0.0.1:" << ports_.client << "\n"
      << "http: 127.0.0.1:" << ports_.monitor << "\n"
      << "jetstream { store_dir: \"" << store_dir_.string() << "\" }\n";
  if (!routes_.empty()) {
    out << "cluster {\n  name: tidemark-test\n  listen: 127.0.0.1:" << ports_.route << "\n" << routes_ << "}\n";
  }
  out << extra_config_ << "\n";
  if (!out) throw std::runtime_error("cannot write " + config_file_.string());
}

void NatsNode::start() {
  if (process_ && process_->running()) throw std::logic_error("nats node " + name_ + " is already running");
  const std::string program = nats_server_program();
  if (program.empty()) throw std::runtime_error("nats-server is not installed (Debian package nats-server)");
  write_config();
  process_ = std::make_unique<Process>(program, std::vector<std::string>{"-c", config_file_.string()},
                                       ProcessOptions{.timeout = std::chrono::seconds(30)});
}

void NatsNode::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) {
      throw std::runtime_error("nats-server " + name_ + " exited before it was ready:\n" + last_output_);
    }
    const HttpAnswer answer = http_request(ports_.monitor, "GET", "/healthz", {}, "", std::chrono::seconds(2));
    if (answer.status == 200) return;
    // A connection is refused at once while the server starts: poll again shortly.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("nats-server " + name_ + " was not ready (GET /healthz) within " +
                           std::to_string(timeout.count()) + " ms");
}

void NatsNode::stop() {
  if (!process_) return;
  process_->kill(SIGTERM);
  const ProcessResult result = process_->wait();
  last_output_ = result.both();
}

void NatsNode::kill() {
  if (!process_) return;
  process_->kill(SIGKILL);
  const ProcessResult result = process_->wait();
  last_output_ = result.both();
}

bool NatsNode::running() {
  if (!process_) return false;
  if (process_->running()) return true;
  if (last_output_.empty()) last_output_ = process_->wait().both();
  return false;
}

std::string NatsNode::monitor(const std::string& target) const {
  const HttpAnswer answer = http_request(ports_.monitor, "GET", target, {}, "", std::chrono::seconds(5));
  return answer.status == 200 ? answer.body : "";
}

namespace {

// Starts `count` nodes n0, n1, ... with folders of their own under `folder` (routed to each
// other when there is more than one) on ports free_port() found, and waits until each is
// ready. A port found free can be taken by a test running beside this one before the server
// binds it: that server then exits at once, and every node starts again, afresh, on new ports
// (three tries).
std::vector<std::unique_ptr<NatsNode>> start_nodes(const fs::path& folder, int count, const std::string& extra_config,
                                                   std::chrono::milliseconds timeout) {
  for (int attempt = 1;; ++attempt) {
    // Every node's ports first: each node's routes name all of them.
    std::vector<NatsNodePorts> ports;
    std::string routes;
    for (int i = 0; i < count; ++i) {
      ports.push_back(NatsNodePorts::free());
      routes += "    nats-route://127.0.0.1:" + std::to_string(ports.back().route) + "\n";
    }
    routes = count > 1 ? "  routes: [\n" + routes + "  ]\n" : "";
    std::vector<std::unique_ptr<NatsNode>> nodes;
    for (int i = 0; i < count; ++i) {
      const std::string name = "n" + std::to_string(i);
      fs::remove_all(folder / name);
      nodes.push_back(std::make_unique<NatsNode>(name, folder / name, ports[static_cast<std::size_t>(i)], routes,
                                                 extra_config));
    }
    for (auto& node : nodes) node->start();
    try {
      for (auto& node : nodes) node->wait_ready(timeout);
      return nodes;
    } catch (const std::runtime_error& error) {
      if (attempt == 3 || std::string_view(error.what()).find("address already in use") == std::string_view::npos) throw;
    }
  }
}

}  // namespace

NatsServer::NatsServer(const std::string& extra_config) : folder_(make_temp_folder("server")) {
  node_ = std::move(start_nodes(folder_, 1, extra_config, std::chrono::seconds(30)).front());
}

NatsServer::~NatsServer() {
  node_.reset();
  std::error_code ignored;
  fs::remove_all(folder_, ignored);
}

NatsCluster::NatsCluster(int nodes, const std::string& extra_config) : folder_(make_temp_folder("cluster")) {
  if (nodes < 1) throw std::invalid_argument("a NATS cluster needs at least one node");
  nodes_ = start_nodes(folder_, nodes, extra_config, std::chrono::seconds(60));
}

NatsCluster::~NatsCluster() {
  nodes_.clear();
  std::error_code ignored;
  fs::remove_all(folder_, ignored);
}

std::vector<std::string> NatsCluster::urls() const {
  std::vector<std::string> urls;
  for (const auto& node : nodes_) urls.push_back(node->url());
  return urls;
}

NatsNode& NatsCluster::node(const std::string& name) {
  for (auto& node : nodes_) {
    if (node->name() == name) return *node;
  }
  throw std::out_of_range("no nats node named " + name);
}

NatsNode& NatsCluster::meta_leader(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string agreed;
    bool agree = true;
    for (auto& node : nodes_) {
      if (!node->running()) continue;
      boost::system::error_code error;
      const boost::json::value jsz = boost::json::parse(node->monitor("/jsz"), error);
      const auto* meta = error || !jsz.is_object() ? nullptr : jsz.as_object().if_contains("meta_cluster");
      const auto* leader = meta != nullptr && meta->is_object() ? meta->as_object().if_contains("leader") : nullptr;
      const std::string name = leader != nullptr && leader->is_string() ? std::string(leader->as_string()) : "";
      if (name.empty() || (!agreed.empty() && name != agreed)) agree = false;
      agreed = name;
    }
    if (agree && !agreed.empty() && node(agreed).running()) return node(agreed);
    if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("the nats nodes agree on no meta leader");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace tidemark::testing
