// The foundations and rl teaching nodes' tests; filled as the nodes land.
#include <gtest/gtest.h>

#include "nodes/library.h"

TEST(EduFoundationsNodes, RegistryBuilds) { EXPECT_NE(codefy::nodes::builtin().get("Start"), nullptr); }
