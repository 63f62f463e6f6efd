// The run vocabulary as clients see it, written down once as JSON Schema:
// the messages /ws/execution sends, the kinds of RunError and the codes of a
// run envelope's error. `codefy protocol --json` prints it; the editor's
// types (web/src/api/types.ts) are checked against that output, and the
// server's tests check what it really sends against it.
#pragma once

#include <nlohmann/json.hpp>

namespace codefy::server {

/// {"$schema", "title", "ws_server_message": {oneOf: [one object schema per
/// message type, with its required fields]}, "run_error_kinds": [...],
/// "envelope_error_codes": [...]}.
nlohmann::json protocol_schema();

/// "" when `message` fits one of the schema's WebSocket message types (its
/// type is known and its required fields are there, of the declared JSON
/// types), else what does not fit.
std::string check_ws_message(const nlohmann::json& schema, const nlohmann::json& message);

}  // namespace codefy::server
