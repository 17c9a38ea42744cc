//===- LoadingServerTests.cpp - 503 on the port while the model loads -----===//

#include "runtime/serve/LoadingServer.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

using namespace pccx::serve;
using nlohmann::json;

TEST(LoadingServer, AnswersLoadingThenFreesThePort) {
  LoadingServer loading("tiny");
  std::string error;
  const int port = loading.start("127.0.0.1", 0, &error);
  ASSERT_GT(port, 0) << error;
  httplib::Client client("127.0.0.1", port);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(health->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(health->body),
            json::parse(R"({"status": "loading", "model": "tiny"})"));
  auto chat = client.Post("/v1/chat/completions", R"({"messages": []})",
                          "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 503);
  EXPECT_EQ(json::parse(chat->body)["error"]["code"], "model_loading");

  // A second one cannot take the port; once stopped, another server can.
  LoadingServer other("tiny");
  EXPECT_EQ(other.start("127.0.0.1", port, &error), -1);
  EXPECT_NE(error.find("cannot listen on 127.0.0.1:" + std::to_string(port)),
            std::string::npos);
  loading.stop();
  LoadingServer again("tiny");
  EXPECT_EQ(again.start("127.0.0.1", port, &error), port) << error;
}
