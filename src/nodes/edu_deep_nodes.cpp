// The teaching nodes of CodefyUI's `deep` plugin pack (deep:Edu-*);
// registered as they land.
#include "nodes/library.h"

namespace codefy::nodes {

void register_edu_deep_nodes(NodeRegistry& r) { (void)r; }

}  // namespace codefy::nodes
