// The libFuzzer targets of codefy_fuzz. One program holds them all (one
// link of LibTorch and our libraries instead of seven); the name it is
// started by, fuzz_<target> (a link to codefy_fuzz), picks the target.
//
// Each target feeds its bytes to one reader of untrusted input the way the
// server or `codefy run` does and lets through only what that reader's
// contract says it throws for bad input: anything else escaping (another
// exception type, a crash, a sanitizer report) is a finding. Where two ways
// of reading must agree, the target checks that too (fuzz_check).
#pragma once

#include <string>
#include <string_view>

namespace codefy::fuzz {

void graph(std::string_view data);        ///< graph.json: parse, expand presets, validate (as POST /api/graph/validate)
void layers(std::string_view data);       ///< {"layers", "input_shape"}: layer spec parse and shape trace
void pickle(std::string_view data);       ///< torch.save zip: the pickle inside a valid zip, or a whole zip
void safetensors(std::string_view data);  ///< a safetensors file
void multipart(std::string_view data);    ///< Content-Type line + multipart body, in memory and from a file
void csv(std::string_view data);          ///< a CSV file: read_csv_table and load_csv
void ws_execute(std::string_view data);   ///< WebSocket messages to WsExecution::receive on one connection

/// A property the target checks failed: prints `what` and aborts (a finding).
[[noreturn]] void fail(const std::string& what);
inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

/// A file holding `data` that the readers open by path (a memfd, no disk
/// writes): the same path for every input of this process.
const std::string& file_with(std::string_view data);

}  // namespace codefy::fuzz
