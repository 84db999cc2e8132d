// The Fashion-MNIST dataset for the examples (fashion_mnist.cc, tune_fashion_mnist.cc): the IDX
// files, gzipped, as Debian's dataset-fashion-mnist installs them in
// /usr/share/datasets/fashion-mnist (train-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz, ...).
// Header-only, so that each example stays one .cc to build. Link zlib.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

// The whole of a gzipped file. Throws std::runtime_error naming the file (and what to install)
// when it cannot be read.
inline std::vector<uint8_t> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    throw std::runtime_error("cannot open " + path +
                             " (install Debian's dataset-fashion-mnist, or give --data DIR)");
  }
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + n);
  bool bad = n < 0;
  gzclose(f);
  if (bad) throw std::runtime_error(path + " is not a readable gzip file");
  return out;
}

inline uint32_t BigEndian(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         b[at + 3];
}

struct Dataset {
  int n = 0;
  std::vector<float> x;  // n x 784, scaled to [0, 1]
  std::vector<uint8_t> y;
};

// Images [first, first + limit) of DIR/PREFIX-images-idx3-ubyte.gz and their labels (PREFIX is
// "train" or "t10k"); limit 0: all from `first` on. Throws std::runtime_error for missing, broken
// or inconsistent files, or a `first` past the end.
inline Dataset Load(const std::string& dir, const std::string& prefix, int limit, int first = 0) {
  auto images = ReadGz(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  auto labels = ReadGz(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (images.size() < 16 || BigEndian(images, 0) != 2051 || labels.size() < 8 ||
      BigEndian(labels, 0) != 2049) {
    throw std::runtime_error(dir + "/" + prefix + ": not Fashion-MNIST IDX files");
  }
  uint32_t n = BigEndian(images, 4), rows = BigEndian(images, 8), cols = BigEndian(images, 12);
  if (rows * cols != 784 || BigEndian(labels, 4) != n || images.size() < 16 + size_t{n} * 784 ||
      labels.size() < 8 + size_t{n}) {
    throw std::runtime_error(dir + "/" + prefix + ": truncated or inconsistent IDX files");
  }
  if (first < 0 || first >= static_cast<int>(n)) {
    throw std::runtime_error(dir + "/" + prefix + ": has " + std::to_string(n) +
                             " images, none from " + std::to_string(first) + " on");
  }
  int available = static_cast<int>(n) - first;
  Dataset d;
  d.n = limit > 0 ? std::min(limit, available) : available;
  d.x.resize(size_t(d.n) * 784);
  const uint8_t* pixels = images.data() + 16 + size_t(first) * 784;
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = pixels[i] / 255.0f;
  d.y.assign(labels.begin() + 8 + first, labels.begin() + 8 + first + d.n);
  return d;
}
