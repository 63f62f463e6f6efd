// The editor's WebSocket protocol (/ws/execution): up to eight text frames
// (the input split at NUL bytes, which JSON text never holds) go to
// WsExecution::receive on one connection, whose send collects the answers,
// then the connection closes. A graph that validates is queued as the
// server would queue it, on a CPU worker that one endless job holds for the
// whole process: no fuzzed run starts, and each input's queued run is
// stopped by a later frame or by the close, so nothing piles up.
//
// receive must throw nothing; every answer is a JSON object with a "type";
// and every run gets exactly one final message (execution_complete, _error
// or _stopped): an execute that is refused gets it at once, one that is
// queued when a stop, the next execute or the close ends it, and a stop
// with no run waiting is answered execution_stopped.
#include "engine/node.h"
#include "fuzz/fuzz_targets.h"
#include "nodes/library.h"
#include "server/inspector.h"
#include "server/runs.h"
#include "server/ws_execution.h"
#include "util/json_input.h"

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#ifndef CODEFY_SOURCE_DIR
#error "CODEFY_SOURCE_DIR: the repository (the examples an execute may name)"
#endif

namespace codefy::fuzz {

namespace {

/// The server's parts a WebSocket connection talks to, made once per process
/// and never destroyed (the held worker would make exit wait).
struct WsServer {
  WsServer()
      : inspector(store::StoreSettings{}),
        runs({server::WorkerSpec{"cpu", {"cpu"}}}, nodes::builtin(), inspector, std::filesystem::temp_directory_path(),
             /*max_queued=*/4),
        ws(runs, nodes::builtin(), store::StoreLimits{int64_t{64} << 20, 100}, std::filesystem::temp_directory_path(),
           std::filesystem::path(CODEFY_SOURCE_DIR) / "examples") {
    // Holds the CPU worker until the process ends: runs queue behind it.
    runs.queues().submit("cpu", [](const CancellationToken& token, const std::string&) {
      while (!token.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    });
  }
  server::Inspector inspector;
  server::Runs runs;
  server::WsExecution ws;
};

bool is_final(const std::string& type) {
  return type == "execution_complete" || type == "execution_error" || type == "execution_stopped";
}

/// The frame's action as receive reads it; "" when it has none it can read.
std::string action_of(const std::string& frame) {
  try {
    const nlohmann::json m = util::parse_json(frame);
    return m.is_object() ? util::string_field(m, "action").value_or("") : "";
  } catch (const util::JsonInputError&) {
    return "";
  }
}

}  // namespace

void ws_execute(std::string_view data) {
  static WsServer* const server = new WsServer;

  std::mutex mutex;
  std::vector<std::string> sent;
  auto c = server->ws.open([&](std::string text) {
    std::lock_guard<std::mutex> lock(mutex);
    sent.push_back(std::move(text));
  });
  size_t finals = 0;  // final messages among sent[0, seen)
  size_t seen = 0;
  // Reads the answers since the last call: each a JSON object with a type.
  const auto new_finals = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    size_t n = 0;
    for (; seen < sent.size(); ++seen) {
      nlohmann::json m;
      try {
        m = util::parse_json(sent[seen]);
      } catch (const util::JsonInputError& e) {
        fail("an answer is not JSON (" + std::string(e.what()) + "): " + sent[seen]);
      }
      check(m.is_object() && m.contains("type") && m["type"].is_string(), "an answer without a type: " + sent[seen]);
      if (is_final(m["type"].get<std::string>())) ++n;
    }
    finals += n;
    return n;
  };

  bool waiting = false;  // a queued run of this connection has no final message yet
  for (int frames = 0; frames < 8 && !data.empty(); ++frames) {
    const size_t end = data.find('\0');
    const std::string frame(data.substr(0, end));
    data = end == std::string_view::npos ? std::string_view() : data.substr(end + 1);

    const std::string action = action_of(frame);
    server->ws.receive(c, frame);
    const size_t got = new_finals();
    if (action == "stop") {
      check(got == 1, "a stop was answered with " + std::to_string(got) + " final messages");
      waiting = false;
    } else if (action == "execute") {
      // The run it replaces ends now; the new one is refused at once or queued.
      const size_t replaced = waiting ? 1 : 0;
      check(got == replaced || got == replaced + 1,
            "an execute was answered with " + std::to_string(got) + " final messages");
      waiting = got == replaced;
    } else {
      check(got == 0, "a frame with action '" + action + "' sent a final message");
    }
  }
  server->ws.close(c);
  const size_t at_close = new_finals();
  check(at_close == (waiting ? 1u : 0u), "closing the connection sent " + std::to_string(at_close) +
                                             " final messages for " + (waiting ? "its queued run" : "no run"));
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    check(!c->run || c->run->answered, "a run is left unanswered after the close");
  }
  check(server->runs.queues().runs().size() <= server::RunQueues::kKeepFinished + 8, "runs pile up");
}

}  // namespace codefy::fuzz
