// The teaching nodes of CodefyUI's `foundations` and `rl` plugin packs
// (foundations:Edu-*, rl:Edu-*); registered as they land.
#include "nodes/library.h"

namespace codefy::nodes {

void register_edu_foundations_nodes(NodeRegistry& r) { (void)r; }

}  // namespace codefy::nodes
