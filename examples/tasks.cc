// Remote tasks: run functions on the cluster, chain them through ObjectRefs, share a large value
// with Put, and see a remote exception come back to Get.
//
//   build/bin/tasks                         # on an embedded cluster
//   CUMULUS_ADDRESS=127.0.0.1:6380 build/bin/tasks   # on a running one
#include <cumulus/cumulus.h>

#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

int Square(int x) { return x * x; }

int Add(int a, int b) { return a + b; }

double Mean(std::vector<double> values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

int Divide(int a, int b) {
  if (b == 0) throw std::domain_error("division by zero");
  return a / b;
}

CUMULUS_REMOTE(Square, Add, Mean, Divide);

namespace {

// What went wrong, printed as one line; the example then exits 1.
int Fail(const std::string& what) {
  std::fprintf(stderr, "tasks: %s\n", what.c_str());
  cumulus::Shutdown();
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (cumulus::Status st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  try {
    // Many tasks at once; Get collects them in order.
    std::vector<cumulus::ObjectRef<int>> squares;
    for (int i = 0; i < 100; ++i) squares.push_back(cumulus::Task(Square).Remote(i));
    std::vector<int> values = cumulus::Get(squares);
    int sum = std::accumulate(values.begin(), values.end(), 0);
    std::printf("sum of squares 0..99 = %d\n", sum);
    if (sum != 328350)
      return Fail("the sum of squares 0..99 is 328350, not " + std::to_string(sum));

    // A chain: each task runs when its argument is ready, on the value.
    cumulus::ObjectRef<int> a = cumulus::Task(Square).Remote(3);
    cumulus::ObjectRef<int> b = cumulus::Task(Square).Remote(4);
    cumulus::ObjectRef<int> c = cumulus::Task(Add).Remote(a, b);
    int hyp = cumulus::Get(c);
    std::printf("3^2 + 4^2 = %d\n", hyp);
    if (hyp != 25) return Fail("3^2 + 4^2 is 25, not " + std::to_string(hyp));

    // A large value stored once and passed by reference.
    std::vector<double> big(1 << 20, 2.0);
    cumulus::ObjectRef<std::vector<double>> ref = cumulus::Put(big);
    double mean = cumulus::Get(cumulus::Task(Mean).Remote(ref));
    std::printf("mean of 1Mi values = %.1f\n", mean);
    if (mean != 2.0) return Fail("the mean of 1Mi 2.0s is 2.0, not " + std::to_string(mean));

    // An exception in remote code comes back to Get, naming the function and the node.
    std::string error;
    try {
      cumulus::Get(cumulus::Task(Divide).Remote(1, 0));
    } catch (const cumulus::Error& e) {
      error = e.what();
      std::printf("remote error: %s\n", e.what());
    }
    if (error.find("division by zero") == std::string::npos) {
      return Fail("Divide(1, 0) must come back as the remote exception 'division by zero', not " +
                  (error.empty() ? std::string("a result") : "'" + error + "'"));
    }
  } catch (const cumulus::Error& e) {
    return Fail(e.what());
  }
  cumulus::Shutdown();
  return 0;
}
