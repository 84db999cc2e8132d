// libcumulus.so is made of the runtime's static archives, linked whole (api/CMakeLists.txt); a
// shared library needs a source of its own, and this is it.
