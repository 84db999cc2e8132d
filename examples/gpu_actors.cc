// GPU actors: each actor asks for one GPU and its process sees exactly that device in
// CUDA_VISIBLE_DEVICES; two actors asking for half a GPU share one device. The example checks
// both and exits 1, saying what was wrong, if they do not hold.
//
// Without GPUs the embedded node declares two (GPU=2) so the scheduling runs anyway; on a
// machine with GPUs, run it against a cluster whose nodes detect them (CUMULUS_ADDRESS=...).
#include <cumulus/cumulus.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

class GpuWorker {
 public:
  std::string Devices() const {
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    return v ? v : "(unset)";
  }
};

GpuWorker* CreateGpuWorker() { return new GpuWorker(); }

CUMULUS_REMOTE(CreateGpuWorker, &GpuWorker::Devices);

namespace {

// One device id ("0", "3"), not a list, not empty, not unset.
bool OneDevice(const std::string& v) {
  return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
}

// Starts two actors that each ask for `gpus`, prints what each sees, and returns them.
std::vector<std::string> Run(double gpus) {
  std::vector<cumulus::ActorHandle<GpuWorker>> actors;
  for (int i = 0; i < 2; ++i) {
    actors.push_back(cumulus::Actor(CreateGpuWorker).SetResource("GPU", gpus).Remote());
  }
  std::vector<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    seen.push_back(cumulus::Get(actors[i].Task(&GpuWorker::Devices).Remote()));
    std::printf("actor %d (GPU=%g):%s CUDA_VISIBLE_DEVICES=%s\n", i, gpus, gpus < 1 ? "" : "  ",
                seen.back().c_str());
  }
  for (auto& a : actors) (void)a.Kill();
  return seen;
}

}  // namespace

int main(int argc, char** argv) {
  cumulus::InitOptions options;
  if (!std::getenv("CUMULUS_ADDRESS")) options.resources = "CPU=2,GPU=2";
  if (cumulus::Status st = cumulus::Init(argc, argv, options); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  std::string wrong;
  try {
    // Whole GPUs are exclusive: each actor sees one device, not the other's.
    auto whole = Run(1);
    if (!OneDevice(whole[0]) || !OneDevice(whole[1]) || whole[0] == whole[1]) {
      wrong = "two GPU=1 actors must each see one device of its own, not " + whole[0] + " and " +
              whole[1];
    }
    // Fractions share a device: both see the same single one.
    if (wrong.empty()) {
      auto halves = Run(0.5);
      if (!OneDevice(halves[0]) || halves[0] != halves[1]) {
        wrong =
            "two GPU=0.5 actors must share one device, not see " + halves[0] + " and " + halves[1];
      }
    }
  } catch (const cumulus::Error& e) {
    wrong = e.what();
  }
  cumulus::Shutdown();
  if (!wrong.empty()) {
    std::fprintf(stderr, "gpu_actors: %s\n", wrong.c_str());
    return 1;
  }
  std::printf("gpu_actors: every actor saw the devices it was given\n");
  return 0;
}
