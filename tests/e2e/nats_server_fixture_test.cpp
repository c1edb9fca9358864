// The NATS test fixture itself: a single server and a 3-node cluster come up with JetStream,
// and a node survives a kill and a restart on the same ports and store.
#include <gtest/gtest.h>

#include "tests/support/nats_server.hpp"

namespace tidemark::testing {
namespace {

TEST(NatsServerFixture, SingleServerServesJetStreamOnLoopbackAndRestartsAfterAKill) {
  if (nats_server_program().empty()) GTEST_SKIP() << "nats-server is not installed";
  NatsServer server;
  EXPECT_EQ(server.url(), "nats://127.0.0.1:" + std::to_string(server.node().port()));
  EXPECT_NE(server.node().monitor("/jsz").find("\"config\""), std::string::npos);

  server.node().kill();
  EXPECT_FALSE(server.node().running());
  EXPECT_EQ(server.node().monitor("/healthz"), "");
  server.node().start();
  server.node().wait_ready();
  EXPECT_TRUE(server.node().running());
  server.node().stop();
  EXPECT_FALSE(server.node().running());
}

TEST(NatsServerFixture, ThreeNodeClusterElectsAMetaLeaderAndKeepsItAcrossANodeRestart) {
  if (nats_server_program().empty()) GTEST_SKIP() << "nats-server is not installed";
  NatsCluster cluster(3);
  ASSERT_EQ(cluster.urls().size(), 3u);
  EXPECT_NE(cluster.node(0).monitor("/jsz").find("\"meta_cluster\""), std::string::npos);

  cluster.node(1).kill();
  // Two of three nodes still form a majority: the others stay healthy.
  cluster.node(0).wait_ready();
  cluster.node(1).start();
  cluster.node(1).wait_ready();
  EXPECT_EQ(&cluster.node("n2"), &cluster.node(2));
}

}  // namespace
}  // namespace tidemark::testing
