// Where results go: -o and save onto links, pipes, devices and missing
// folders (checked before any work, never replaced by a regular file),
// saves written only when every manifest succeeded and relative to their
// manifest, write failures as exit 3; numeric options that must be sane;
// interrupted benchmarks and what compare makes of partial files.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

json saxpy_with_save(const std::string& npy) {
  json m = saxpy_manifest(777);
  m["code_object"] = {{"host", (kKernels / "saxpy.host.so").string()}};
  m["save"] = {{{"buffer", "y"}, {"npy", npy}}};
  return m;
}

// A short launch-overhead run on host; `sampling` replaces the default
// five samples.
Result bench_host(const TempDir& dir, std::vector<std::string> extra,
                  std::vector<std::string> sampling = {"--min-samples", "5", "--max-samples", "5"}) {
  std::vector<std::string> args = {"bench", "launch-overhead", "--backend", "host", "--kernel-dir", kKernels.string(),
                                   "--quick", "--min-time", "0", "-q"};
  args.insert(args.end(), sampling.begin(), sampling.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return run_lrrt(dir, args);
}

// Runs lrrt without waiting; the caller signals and reaps it.
pid_t spawn_lrrt(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {kBinary.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const fs::path err = dir / ".stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return pid;
}

}  // namespace

TEST_CASE("-o onto a link, a pipe or a device: the link stays, the pipe gets the bytes, nothing is replaced") {
  TempDir dir;
  const fs::path manifest = write_manifest(dir, "saxpy.json", saxpy_manifest(513));
  auto run_to = [&](const fs::path& out) {
    return run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-q",
                          "--format", "json", "-o", out.string(), manifest.string()});
  };
  // A symbolic link: the target gets the result, the link stays a link.
  write_text(dir / "target.json", "old");
  fs::create_symlink("target.json", dir / "link.json");
  Result r = run_to(dir / "link.json");
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(json::parse(read_text(dir / "target.json"))["kind"] == "run");
  // A character device stays one.
  CHECK(run_to("/dev/null").rc == 0);
  CHECK(fs::is_character_file("/dev/null"));
  // A FIFO with a reader gets the whole document, and stays a FIFO.
  const fs::path fifo = dir / "pipe.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_error(dir, run_to(fifo), 2, {"pipe.json", "no reader"});
  std::string got;
  std::thread reader([&] { got = read_text(fifo); });
  Result piped;
  for (int i = 0; i < 200; ++i) {  // until the reader has opened its end
    piped = run_to(fifo);
    if (piped.rc == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  CHECK(piped.rc == 0);
  CHECK(fs::is_fifo(fifo));
  CHECK(json::parse(got)["runs"][0]["verification"]["status"] == "passed");
  // /dev/stdout is the descriptor lrrt has, not a file to replace.
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-q",
                     "--format", "json", "-o", "/dev/stdout", manifest.string()});
  CHECK(r.rc == 0);
  CHECK(json::parse(r.out)["kind"] == "run");
  // The same rules for compare -o and bench -o.
  REQUIRE(bench_host(dir, {"-o", (dir / "base.json").string()}).rc == 0);
  fs::create_symlink("cmp-target.md", dir / "cmp-link.md");
  write_text(dir / "cmp-target.md", "old");
  r = run_lrrt(dir, {"compare", (dir / "base.json").string(), (dir / "base.json").string(), "-q", "-o",
                     (dir / "cmp-link.md").string()});
  CHECK(r.rc == 0);
  CHECK(fs::is_symlink(dir / "cmp-link.md"));
  CHECK(read_text(dir / "cmp-target.md").rfind("# lrrt compare results", 0) == 0);
  fs::create_symlink("bench-target.json", dir / "bench-link.json");
  write_text(dir / "bench-target.json", "old");
  CHECK(bench_host(dir, {"-o", (dir / "bench-link.json").string()}).rc == 0);
  CHECK(fs::is_symlink(dir / "bench-link.json"));
  CHECK(json::parse(read_text(dir / "bench-target.json"))["kind"] == "bench");
}

TEST_CASE("-o and save paths are checked before any work") {
  TempDir dir;
  const fs::path manifest = write_manifest(dir, "saxpy.json", saxpy_manifest(300));
  fs::create_directories(dir / "adir");
  fs::create_symlink("nowhere/x.json", dir / "dangling.json");
  for (const std::string& out : {(dir / "nodir" / "x.json").string(), (dir / "adir").string(),
                                 (dir / "saxpy.json" / "x.json").string(), (dir / "dangling.json").string()}) {
    CAPTURE(out);
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"run", "--backend", "host", "--kernel-dir", kKernels.string(), manifest.string()},
          std::vector<std::string>{"bench", "launch-overhead", "--backend", "host", "--quick"},
          std::vector<std::string>{"compare", manifest.string(), manifest.string()},
          std::vector<std::string>{"inspect", (kKernels / "saxpy.host.so").string()}}) {
      std::vector<std::string> args = command;
      args.insert(args.end(), {"-o", out});
      Result r = run_lrrt(dir, args);
      INFO(command[0] << ": " << r.err);
      CHECK(r.rc == 2);
      CHECK(r.err.find("--output") != std::string::npos);
      // Nothing ran: no progress note, no verification, no benchmark.
      CHECK(r.err.find("verification") == std::string::npos);
      CHECK(r.err.find("[1/") == std::string::npos);
    }
  }
  CHECK_FALSE(fs::exists(dir / "nodir"));
  // A save into a missing folder fails before the kernel runs.
  const fs::path bad_save = write_manifest(dir, "bad_save.json", saxpy_with_save("nodir/y.npy"));
  Result r = run_lrrt(dir, {"run", "--backend", "host", bad_save.string()});
  expect_error(dir, r, 2, {"bad_save.json", "/save/0", "nodir"});
  CHECK(r.err.find("verification") == std::string::npos);
  // Two manifests saving to one file, or a save onto -o: refused up front.
  const fs::path a = write_manifest(dir, "a.json", saxpy_with_save("same.npy"));
  const fs::path b = write_manifest(dir, "b.json", saxpy_with_save("same.npy"));
  expect_error(dir, run_lrrt(dir, {"run", "--backend", "host", "-q", a.string(), b.string()}), 2,
               {"same.npy", "twice"});
  expect_error(dir, run_lrrt(dir, {"run", "--backend", "host", "-q", "-o", (dir / "same.npy").string(), a.string()}),
               2, {"same.npy", "twice"});
  CHECK_FALSE(fs::exists(dir / "same.npy"));
}

TEST_CASE("save: relative to the manifest, and written only when every manifest succeeded") {
  TempDir dir;
  fs::create_directories(dir / "sub");
  const fs::path saving = write_manifest(dir, "sub/save.json", saxpy_with_save("saved_y.npy"));
  json bad = saxpy_manifest(100);
  bad["kernel"] = "no_such_kernel";
  const fs::path failing = write_manifest(dir, "sub/bad.json", bad);
  // The later manifest fails: the earlier one's save is not written.
  Result r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", saving.string(),
                            failing.string()});
  expect_error(dir, r, 2, {"bad.json", "no_such_kernel"});
  CHECK_FALSE(fs::exists(dir / "sub" / "saved_y.npy"));
  CHECK_FALSE(fs::exists(dir / "saved_y.npy"));
  for (const auto& e : fs::directory_iterator(dir / "sub"))
    CHECK_MESSAGE(e.path().filename().string().find(".tmp.") == std::string::npos, e.path());
  // Alone it succeeds, and the file lands beside the manifest, whatever the
  // working directory (run_lrrt runs in the test's folder, not in sub/).
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", "--format", "json",
                     saving.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(fs::exists(dir / "sub" / "saved_y.npy"));
  CHECK_FALSE(fs::exists(dir / "saved_y.npy"));
  CHECK(json::parse(r.out)["runs"][0]["saved"][0]["npy"] == (dir / "sub" / "saved_y.npy").string());
  // The saved array is the verified output: 777 floats after a 128-byte header.
  CHECK(fs::file_size(dir / "sub" / "saved_y.npy") == 128 + 777 * 4);
}

TEST_CASE("a result file that cannot be written midway is exit 3, with nothing half-written") {
  TempDir dir;
  // A save of 4 MiB under a file-size limit of 1 MiB (the code object, which
  // the host backend copies into memory, is far smaller): write() fails
  // with EFBIG after the folder was found writable.
  json m = saxpy_with_save("y.npy");
  m["buffers"][0]["count"] = 1u << 20;
  m["buffers"][1]["count"] = 1u << 20;
  const fs::path manifest = write_manifest(dir, "saxpy.json", m);
  const std::string cmd = "ulimit -f 1024; exec " + kBinary.string() + " run --backend host --kernel-dir " +
                          kKernels.string() + " --iterations 1 -q -o " + (dir / "out.json").string() + " " +
                          manifest.string();
  const int status = std::system(("sh -c '" + cmd + "' 2>" + (dir / "err.txt").string()).c_str());
  REQUIRE(WIFEXITED(status));
  const std::string err = read_text(dir / "err.txt");
  INFO(err);
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(err.find("y.npy") != std::string::npos);
  CHECK(err.find("File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "y.npy"));
  CHECK_FALSE(fs::exists(dir / "out.json"));
  for (const auto& e : dir.entries()) CHECK_MESSAGE(e.find(".tmp.") == std::string::npos, e);
  // A full device (ENOSPC) is the same class: exit 3, not an input error.
  if (fs::exists("/dev/full"))
    expect_error(dir,
                 run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", "-o", "/dev/full",
                                write_manifest(dir, "small.json", saxpy_manifest(100)).string()}),
                 3, {"/dev/full", "No space left"});
}

TEST_CASE("bench and compare take only sane numbers") {
  TempDir dir;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--min-time", "-5"}, {"--min-time", "nan"}, {"--min-time", "inf"},
        {"--max-time", "-3"}, {"--max-time", "0"}, {"--max-samples", "0"}, {"--min-samples", "-1"},
        {"--min-samples", "0"}, {"--min-samples", "5x"}, {"--max-samples", "99999999999999999999"},
        {"--sizes", "17179869184G"}, {"--sizes", "1..17179869183G"}}) {
    CAPTURE(bad[0] + " " + bad[1]);
    std::vector<std::string> args = {"bench", "copy-bandwidth", "--backend", "host", "--quick", "-q", "-o",
                                     (dir / "b.json").string()};
    args.insert(args.end(), bad.begin(), bad.end());
    Result r = run_lrrt(dir, args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(bad[0] == "--sizes" ? "too large a size" : bad[0]) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "b.json"));
  }
  // max below min is a contradiction, not a silent fix.
  Result r = bench_host(dir, {"-o", (dir / "b.json").string()}, {"--min-samples", "10", "--max-samples", "3"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("below --min-samples") != std::string::npos);
  // Values given are the values used.
  REQUIRE(bench_host(dir, {"--max-time", "2", "-o", (dir / "base.json").string()},
                     {"--min-samples", "7", "--max-samples", "7"})
              .rc == 0);
  const json base = json::parse(read_text(dir / "base.json"));
  CHECK(base["meta"]["options"]["min_samples"] == 7);
  CHECK(base["meta"]["options"]["max_samples"] == 7);
  CHECK(base["meta"]["options"]["max_time_s"] == 2.0);
  for (const auto& m : base["measurements"]) CHECK(m["samples"].size() == 7);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--alpha", "nan"}, {"--alpha", "0"}, {"--alpha", "1"}, {"--threshold", "nan"},
        {"--threshold", "-1"}, {"--threshold", "inf"}}) {
    CAPTURE(bad[0] + " " + bad[1]);
    std::vector<std::string> args = {"compare", (dir / "base.json").string(), (dir / "base.json").string(), "-q"};
    args.insert(args.end(), bad.begin(), bad.end());
    Result c = run_lrrt(dir, args);
    CHECK(c.rc == 2);
    CHECK(c.err.find(bad[0]) != std::string::npos);
  }
}

TEST_CASE("compare: rows missing from NEW and unfinished files are errors unless --allow-missing") {
  TempDir dir;
  REQUIRE(bench_host(dir, {"-o", (dir / "base.json").string()}).rc == 0);
  json base = json::parse(read_text(dir / "base.json"));
  CHECK(base["complete"] == true);
  CHECK_FALSE(base.contains("interrupted"));
  REQUIRE(base["measurements"].size() >= 3);
  // NEW lost a random lrrt measurement (native rows are compared only with
  // --include-native).
  std::mt19937 rng(std::random_device{}());
  json partial = base;
  std::vector<size_t> lrrt_rows;
  for (size_t i = 0; i < partial["measurements"].size(); ++i)
    if (partial["measurements"][i]["impl"] == "lrrt") lrrt_rows.push_back(i);
  REQUIRE(!lrrt_rows.empty());
  const size_t drop = lrrt_rows[std::uniform_int_distribution<size_t>(0, lrrt_rows.size() - 1)(rng)];
  const std::string dropped = partial["measurements"][drop]["name"];
  partial["measurements"].erase(drop);
  write_text(dir / "partial.json", partial.dump());
  expect_error(dir, run_lrrt(dir, {"compare", (dir / "base.json").string(), (dir / "partial.json").string(), "-q"}), 2,
               {"partial.json", "lacks 1 measurement", dropped, "--allow-missing"});
  Result r = run_lrrt(dir, {"compare", (dir / "base.json").string(), (dir / "partial.json").string(), "-q",
                            "--allow-missing", "--format", "json"});
  CHECK(r.rc == 0);
  CHECK(json::parse(r.out)["only_in_base"] == json::array({dropped}));
  // More measurements in NEW than in BASE are fine (a new benchmark).
  CHECK(run_lrrt(dir, {"compare", (dir / "partial.json").string(), (dir / "base.json").string(), "-q"}).rc == 0);
  // A file lrrt bench did not finish, on either side.
  json unfinished = base;
  unfinished["complete"] = false;
  write_text(dir / "unfinished.json", unfinished.dump());
  expect_error(dir, run_lrrt(dir, {"compare", (dir / "base.json").string(), (dir / "unfinished.json").string(), "-q"}),
               2, {"unfinished.json", "did not finish"});
  expect_error(dir, run_lrrt(dir, {"compare", (dir / "unfinished.json").string(), (dir / "base.json").string(), "-q"}),
               2, {"unfinished.json", "did not finish"});
  CHECK(run_lrrt(dir, {"compare", (dir / "unfinished.json").string(), (dir / "base.json").string(), "-q",
                       "--allow-missing"})
            .rc == 0);
}

TEST_CASE("bench: Ctrl-C leaves a file of whole benchmarks marked interrupted, and exits 130") {
  TempDir dir;
  const fs::path out = dir / "partial.json";
  // Several benchmarks with real sampling: far longer than the signal takes.
  pid_t pid = spawn_lrrt(dir, {"bench", "all", "--backend", "host", "--kernel-dir", kKernels.string(), "--min-time",
                               "0.3", "-q", "-o", out.string()});
  // The file appears after the first benchmark, marked incomplete.
  for (int i = 0; i < 3000 && !fs::exists(out); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(fs::exists(out));
  const json running = json::parse(read_text(out));
  CHECK(running["complete"] == false);
  REQUIRE(::kill(pid, SIGINT) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const std::string err = read_text(dir / ".stderr");
  INFO(err);
  REQUIRE(WIFEXITED(status));  // handled, not killed by the signal
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(err.find("interrupted") != std::string::npos);
  const json doc = json::parse(read_text(out));
  CHECK(doc["complete"] == false);
  CHECK(doc["interrupted"] == true);
  // Whole benchmarks only, in `all`'s order: the file holds the first k
  // benchmarks (k < all of them), each with its lrrt rows.
  std::vector<std::string> order;
  {
    std::istringstream list(run_lrrt(dir, {"bench", "--list"}).out);
    std::string line;
    while (std::getline(list, line))
      if (!line.empty()) order.push_back(line.substr(0, line.find(' ')));
  }
  std::vector<std::string> seen;
  for (const auto& m : doc["measurements"])
    if (seen.empty() || seen.back() != m["benchmark"].get<std::string>()) seen.push_back(m["benchmark"].get<std::string>());
  CHECK(seen.size() >= 1);
  CHECK(seen.size() < order.size());
  for (size_t i = 0; i < seen.size() && i < order.size(); ++i) CHECK(seen[i] == order[i]);
  // compare refuses it without --allow-missing.
  expect_error(dir, run_lrrt(dir, {"compare", out.string(), out.string(), "-q"}), 2, {"interrupted"});
}
