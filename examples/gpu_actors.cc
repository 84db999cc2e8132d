// GPU actors: each actor asks for one GPU and its process sees exactly that device in
// CUDA_VISIBLE_DEVICES; two actors asking for half a GPU share one device.
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

int main(int argc, char** argv) {
  cumulus::InitOptions options;
  if (!std::getenv("CUMULUS_ADDRESS")) options.resources = "CPU=2,GPU=2";
  if (cumulus::Status st = cumulus::Init(argc, argv, options); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<cumulus::ActorHandle<GpuWorker>> actors;
  for (int i = 0; i < 2; ++i) {
    actors.push_back(cumulus::Actor(CreateGpuWorker).SetResource("GPU", 1).Remote());
  }
  for (int i = 0; i < 2; ++i) {
    std::printf("actor %d (GPU=1):   CUDA_VISIBLE_DEVICES=%s\n", i,
                cumulus::Get(actors[i].Task(&GpuWorker::Devices).Remote()).c_str());
  }
  for (auto& a : actors) (void)a.Kill();
  actors.clear();
  for (int i = 0; i < 2; ++i) {
    actors.push_back(cumulus::Actor(CreateGpuWorker).SetResource("GPU", 0.5).Remote());
  }
  for (int i = 0; i < 2; ++i) {
    std::printf("actor %d (GPU=0.5): CUDA_VISIBLE_DEVICES=%s\n", i,
                cumulus::Get(actors[i].Task(&GpuWorker::Devices).Remote()).c_str());
  }
  cumulus::Shutdown();
  return 0;
}
