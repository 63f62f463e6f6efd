// The built editor served at `/`: files with their types and caching, the
// single-page fallback, nothing outside the folder, /api untouched.
#include "server/static_files.h"
#include "fixture.h"

#include <gtest/gtest.h>

#include <fstream>

namespace codefy::server {
namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// A built editor as Vite lays it out: index.html, hashed assets, a favicon.
fs::path make_web_dir(const fs::path& root) {
  write(root / "index.html", "<!doctype html><title>Codefy</title><script src=\"/assets/index-3f9a.js\"></script>");
  write(root / "assets" / "index-3f9a.js", "console.log('editor')");
  write(root / "assets" / "index-77aa.css", "body{}");
  write(root / "favicon.svg", "<svg/>");
  return root;
}

TEST(StaticFiles, ContentTypesByExtension) {
  EXPECT_EQ(content_type_for("a/index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_for("assets/x.JS"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("x.css"), "text/css; charset=utf-8");
  EXPECT_EQ(content_type_for("x.svg"), "image/svg+xml");
  EXPECT_EQ(content_type_for("x.woff2"), "font/woff2");
  EXPECT_EQ(content_type_for("x.unknown"), "application/octet-stream");
  EXPECT_EQ(content_type_for("LICENSE"), "application/octet-stream");
}

TEST(StaticFiles, HashedAssetsCacheForeverIndexNever) {
  testing::TempDir dir("codefy-web");
  const StaticFiles web(make_web_dir(dir.path()));
  ASSERT_TRUE(web.built());

  const Response index = web.get("/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.file.filename(), "index.html");
  EXPECT_EQ(index.headers.at("Cache-Control"), "no-cache");
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");

  const Response js = web.get("/assets/index-3f9a.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.file, fs::canonical(dir.path() / "assets" / "index-3f9a.js"));
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js.headers.at("Cache-Control"), "public, max-age=31536000, immutable");

  const Response icon = web.get("/favicon.svg");
  EXPECT_EQ(icon.content_type, "image/svg+xml");
  EXPECT_EQ(icon.headers.at("Cache-Control"), "no-cache");  // not hashed: it may change
}

TEST(StaticFiles, PrecompressedTwinsGoToClientsThatTakeGzip) {
  testing::TempDir dir("codefy-web");
  const fs::path root = make_web_dir(dir.path());
  write(root / "assets" / "index-3f9a.js.gz", "gzipped bytes");
  write(root / "index.html.gz", "gzipped page");
  const StaticFiles web(root);

  const Response gz = web.get("/assets/index-3f9a.js", "deflate, gzip;q=1.0, br");
  EXPECT_EQ(gz.file.filename(), "index-3f9a.js.gz");
  EXPECT_EQ(gz.headers.at("Content-Encoding"), "gzip");
  EXPECT_EQ(gz.content_type, "text/javascript; charset=utf-8");  // what it is once unpacked
  EXPECT_EQ(gz.headers.at("Vary"), "Accept-Encoding");
  EXPECT_EQ(gz.headers.at("Cache-Control"), "public, max-age=31536000, immutable");

  const Response plain = web.get("/assets/index-3f9a.js", "identity");
  EXPECT_EQ(plain.file.filename(), "index-3f9a.js");
  EXPECT_EQ(plain.headers.count("Content-Encoding"), 0u);
  EXPECT_EQ(plain.headers.at("Vary"), "Accept-Encoding");

  EXPECT_EQ(web.get("/graphs/x", "gzip").file.filename(), "index.html.gz");   // the page too
  EXPECT_EQ(web.get("/favicon.svg", "gzip").file.filename(), "favicon.svg");  // no twin: as it is
}

TEST(StaticFiles, EditorRoutesGetThePageMissingFilesGet404) {
  testing::TempDir dir("codefy-web");
  const StaticFiles web(make_web_dir(dir.path()));
  EXPECT_EQ(web.get("/graphs/lenet").file.filename(), "index.html");  // the editor's own route
  EXPECT_EQ(web.get("/assets/gone-1234.js").status, 404);             // a file that is not there
  EXPECT_EQ(web.get("/assets/gone-1234.js").file, fs::path());
}

TEST(StaticFiles, NothingOutsideTheFolder) {
  testing::TempDir dir("codefy-web");
  const fs::path root = make_web_dir(dir.path() / "dist");
  write(dir.path() / "secret.txt", "token");
  const StaticFiles web(root);
  for (const std::string path : {"/../secret.txt", "/assets/../../secret.txt", "/./index.html", "/.env",
                                 "/assets/..%2f..%2fsecret.txt", "/assets\\..\\..\\secret.txt"}) {
    const Response r = web.get(path);
    EXPECT_TRUE(r.status == 404 || r.file.filename() == "index.html") << path;
    EXPECT_EQ(r.file.string().find("secret"), std::string::npos) << path;
  }
  fs::create_symlink(dir.path() / "secret.txt", root / "link.txt");
  EXPECT_EQ(web.get("/link.txt").status, 404);  // a link that leads out is not followed
}

TEST(StaticFiles, UnbuiltEditorSaysHowToBuildIt) {
  const StaticFiles web("");
  EXPECT_FALSE(web.built());
  const Response r = web.get("/anything");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("scripts/build.sh"), std::string::npos);
}

TEST(StaticFiles, OnlyPathsOutsideApiAndWs) {
  EXPECT_TRUE(StaticFiles::serves("/"));
  EXPECT_TRUE(StaticFiles::serves("/assets/x.js"));
  EXPECT_TRUE(StaticFiles::serves("/apix"));
  EXPECT_FALSE(StaticFiles::serves("/api/nothing"));
  EXPECT_FALSE(StaticFiles::serves("/ws/execution"));
}

/// The server with a built editor in its web folder.
class EditorServer : public ServerFixture {
 protected:
  void SetUp() override {
    web_dir_ = make_web_dir(web_.path());
    start();
  }
  testing::TempDir web_{"codefy-web"};
};

TEST_F(EditorServer, ServesTheEditorBesideTheApi) {
  const Reply page = get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.headers.at("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(page.headers.at("cache-control"), "no-cache");
  EXPECT_NE(page.body.find("<title>Codefy</title>"), std::string::npos);

  write(web_dir_ / "assets" / "index-3f9a.js.gz", "pretend gzip");
  EXPECT_EQ(get("/assets/index-3f9a.js", {{"Accept-Encoding", "gzip"}}).headers.at("content-encoding"), "gzip");
  EXPECT_EQ(get("/assets/index-3f9a.js", {{"Accept-Encoding", "gzip"}}).body, "pretend gzip");
  fs::remove(web_dir_ / "assets" / "index-3f9a.js.gz");
  const Reply js = get("/assets/index-3f9a.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.body, "console.log('editor')");
  EXPECT_EQ(js.headers.at("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.headers.at("cache-control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(js.headers.at("x-content-type-options"), "nosniff");

  EXPECT_EQ(get("/graphs/mine?tab=2").body, page.body);  // the single-page fallback
  EXPECT_EQ(get("/api/health").status, 200);
  const Reply unknown = get("/api/nothing");  // API paths never fall back to the page
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json, nlohmann::json({{"detail", "Not Found"}}));
  EXPECT_EQ(post("/graphs/mine", nlohmann::json::object()).status, 404);  // only GET reaches the files
  EXPECT_EQ(get("/", {{"Host", "evil.example:80"}}).status, 421);         // the Host check still applies
}

TEST_F(EditorServer, TypeRulesAsData) {
  const Reply r = get("/api/types");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json["data_types"].size(), r.json["compatible"].size());
  const auto& c = r.json["compatible"];
  auto accepts = [&](const std::string& source, const std::string& target) {
    const auto& t = c.at(source);
    return std::find(t.begin(), t.end(), target) != t.end();
  };
  EXPECT_TRUE(accepts("TENSOR", "TENSOR"));
  EXPECT_TRUE(accepts("IMAGE", "TENSOR"));
  EXPECT_FALSE(accepts("TENSOR", "IMAGE"));
  EXPECT_TRUE(accepts("MODEL", "ANY"));
  EXPECT_FALSE(accepts("TRIGGER", "ANY"));
  EXPECT_TRUE(accepts("TRIGGER", "TRIGGER"));
}

TEST_F(EditorServer, DeviceParamsSayTheirOptionsAreSuggestions) {
  const Reply loop = get("/api/nodes/TrainingLoop");
  ASSERT_EQ(loop.status, 200);
  for (const auto& p : loop.json["params"]) {
    if (p["name"] == "device") {
      EXPECT_EQ(p["open_options"], true);  // "cuda:1" is accepted too
    } else if (p["name"] == "precision") {
      EXPECT_FALSE(p.contains("open_options"));
    }
  }
}

}  // namespace
}  // namespace codefy::server
