// db::with_connect_timeout: every connection db::connect makes is bounded by libpq's
// connect_timeout, set ahead of the URL's own settings so that a connect_timeout the URL
// sets wins (libpq keeps a setting's last value), in both of libpq's URL forms.
#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <memory>
#include <string>

#include "pipeline/store/pg/database.hpp"

namespace tidemark::pipeline::db {
namespace {

// The connect_timeout libpq reads from `url`.
std::string parsed_timeout(const std::string& url) {
  char* error = nullptr;
  const std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> options(PQconninfoParse(url.c_str(), &error),
                                                                             PQconninfoFree);
  if (error != nullptr) PQfreemem(error);
  if (!options) return "unparsable";
  for (const PQconninfoOption* option = options.get(); option->keyword != nullptr; ++option) {
    if (std::string(option->keyword) == "connect_timeout") return option->val != nullptr ? option->val : "";
  }
  return "";
}

TEST(ConnectTimeout, IsSetInEveryFormOfUrl) {
  const std::string timeout = std::to_string(kConnectTimeout.count());
  EXPECT_EQ(with_connect_timeout("postgresql://u@h/db"), "postgresql://u@h/db?connect_timeout=" + timeout);
  EXPECT_EQ(with_connect_timeout("postgres://u@h/db?"), "postgres://u@h/db?connect_timeout=" + timeout);
  EXPECT_EQ(with_connect_timeout("postgresql://u@h/db?sslmode=disable"),
            "postgresql://u@h/db?connect_timeout=" + timeout + "&sslmode=disable");
  EXPECT_EQ(with_connect_timeout("host=h dbname=db"), "connect_timeout=" + timeout + " host=h dbname=db");
  for (const auto* url : {"postgresql://u@h/db", "postgresql://u@h/db?sslmode=disable", "host=h dbname=db"}) {
    EXPECT_EQ(parsed_timeout(with_connect_timeout(url)), timeout) << url;
  }
}

TEST(ConnectTimeout, TheUrlsOwnWins) {
  EXPECT_EQ(parsed_timeout(with_connect_timeout("postgresql://u@h/db?connect_timeout=2")), "2");
  EXPECT_EQ(parsed_timeout(with_connect_timeout("host=h connect_timeout=3")), "3");
}

}  // namespace
}  // namespace tidemark::pipeline::db
