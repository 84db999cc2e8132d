// CUMULUS_REMOTE: registers remote functions, actor factories and actor methods by name, one line:
//
//   int Add(int a, int b) { return a + b; }
//   Counter* CreateCounter(int start) { return new Counter(start); }
//   CUMULUS_REMOTE(Add, CreateCounter, &Counter::Incr, &Counter::Read);
//
// Put it at namespace scope in a .cc file of the program (the driver and its workers run the same
// binary, so both sides see the same names). A function returning `C*` or `std::unique_ptr<C>`
// is an actor factory. Up to 16 names per line; use several lines for more.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cumulus/internal/registry.h"
#include "cumulus/internal/type_desc.h"
#include "cumulus/serialization.h"

namespace cumulus {

// What `ObjectRef<void>` holds: the result of a function that returns nothing.
struct Void {
  CUMULUS_SERIALIZE()
};

namespace internal {

template <typename T>
struct IsUniquePtr : std::false_type {};
template <typename T>
struct IsUniquePtr<std::unique_ptr<T>> : std::true_type {};

template <typename R>
constexpr bool IsFactoryResult() {
  return std::is_pointer_v<R> || IsUniquePtr<R>::value;
}

template <typename R>
struct FactoryClass {
  using type = std::remove_pointer_t<R>;
};
template <typename T>
struct FactoryClass<std::unique_ptr<T>> {
  using type = T;
};

template <typename T>
using Decayed = std::decay_t<T>;

// Deserializes argument i as the parameter's (decayed) type, with a message naming both.
template <typename P>
Decayed<P> ReadArg(const std::string& function, size_t index, std::string_view bytes) {
  auto value = Deserialize<Decayed<P>>(bytes);
  if (!value.ok()) {
    throw std::invalid_argument("argument " + std::to_string(index) + " of " + function + ": " +
                                value.status().message());
  }
  return std::move(*value);
}

template <typename... P, size_t... I>
std::tuple<Decayed<P>...> ReadArgs(const std::string& function, const Args& args,
                                   std::index_sequence<I...>) {
  return std::tuple<Decayed<P>...>(ReadArg<P>(function, I, args[I])...);
}

inline void CheckArity(const std::string& function, size_t want, const Args& args) {
  if (args.size() != want) {
    throw std::invalid_argument(function + " takes " + std::to_string(want) + " arguments, got " +
                                std::to_string(args.size()));
  }
}

template <typename R, typename Call>
std::string SerializeResult(Call&& call) {
  if constexpr (std::is_void_v<R>) {
    call();
    return Serialize(Void{});
  } else {
    return Serialize<Decayed<R>>(call());
  }
}

// The descriptors of a function's (decayed) parameter types and of its result.
template <typename R, typename... P>
TypeSignature SignatureOf() {
  TypeSignature s;
  (s.params.push_back(DescribeType<Decayed<P>>()), ...);
  (s.param_fingerprints.push_back(TypeFingerprint<Decayed<P>>()), ...);
  if constexpr (std::is_void_v<R>) {
    s.result = "void";
    s.result_fingerprint = TypeFingerprint<Void>();
  } else {
    s.result = DescribeType<Decayed<R>>();
    s.result_fingerprint = TypeFingerprint<Decayed<R>>();
  }
  return s;
}

template <typename R, typename... P>
bool Register(const char* spelled, R (*f)(P...)) {
  RemoteFunction fn;
  fn.name = NormalizeName(spelled);
  fn.arity = sizeof...(P);
  fn.signature = &SignatureOf<R, P...>;
  std::string name = fn.name;
  if constexpr (IsFactoryResult<R>()) {
    using C = typename FactoryClass<R>::type;
    fn.class_name = typeid(C).name();
    fn.construct = [f, name](const Args& args) -> std::shared_ptr<void> {
      CheckArity(name, sizeof...(P), args);
      auto tuple = ReadArgs<P...>(name, args, std::index_sequence_for<P...>{});
      R made = std::apply(f, std::move(tuple));
      if (!made) throw std::runtime_error(name + " returned no actor");
      if constexpr (std::is_pointer_v<R>) {
        return std::shared_ptr<C>(made);
      } else {
        return std::shared_ptr<C>(std::move(made));
      }
    };
  } else {
    fn.invoke = [f, name](void*, const Args& args) {
      CheckArity(name, sizeof...(P), args);
      auto tuple = ReadArgs<P...>(name, args, std::index_sequence_for<P...>{});
      return SerializeResult<R>([&]() -> R { return std::apply(f, std::move(tuple)); });
    };
  }
  return RegisterFunction(KeyOf(f), std::move(fn));
}

template <typename C, typename M, typename R, typename... P>
bool RegisterMethod(const char* spelled, M m) {
  RemoteFunction fn;
  fn.name = NormalizeName(spelled);
  fn.arity = sizeof...(P);
  fn.class_name = typeid(C).name();
  fn.signature = &SignatureOf<R, P...>;
  std::string name = fn.name;
  fn.invoke = [m, name](void* instance, const Args& args) {
    CheckArity(name, sizeof...(P), args);
    auto tuple = ReadArgs<P...>(name, args, std::index_sequence_for<P...>{});
    C* self = static_cast<C*>(instance);
    return SerializeResult<R>([&]() -> R {
      return std::apply([&](auto&&... a) -> R { return (self->*m)(std::move(a)...); },
                        std::move(tuple));
    });
  };
  return RegisterFunction(KeyOf(m), std::move(fn));
}

template <typename C, typename R, typename... P>
bool Register(const char* spelled, R (C::*m)(P...)) {
  return RegisterMethod<C, R (C::*)(P...), R, P...>(spelled, m);
}
template <typename C, typename R, typename... P>
bool Register(const char* spelled, R (C::*m)(P...) const) {
  return RegisterMethod<C, R (C::*)(P...) const, R, P...>(spelled, m);
}

}  // namespace internal
}  // namespace cumulus

#define CUMULUS_INTERNAL_CAT2(a, b) a##b
#define CUMULUS_INTERNAL_CAT(a, b) CUMULUS_INTERNAL_CAT2(a, b)
#define CUMULUS_INTERNAL_REG(f)                                                               \
  [[maybe_unused]] static const bool CUMULUS_INTERNAL_CAT(cumulus_registered_, __COUNTER__) = \
      ::cumulus::internal::Register(#f, f);
#define CUMULUS_INTERNAL_N(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
                           N, ...)                                                                \
  N
#define CUMULUS_INTERNAL_E1(f) CUMULUS_INTERNAL_REG(f)
#define CUMULUS_INTERNAL_E2(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E1(__VA_ARGS__)
#define CUMULUS_INTERNAL_E3(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E2(__VA_ARGS__)
#define CUMULUS_INTERNAL_E4(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E3(__VA_ARGS__)
#define CUMULUS_INTERNAL_E5(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E4(__VA_ARGS__)
#define CUMULUS_INTERNAL_E6(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E5(__VA_ARGS__)
#define CUMULUS_INTERNAL_E7(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E6(__VA_ARGS__)
#define CUMULUS_INTERNAL_E8(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E7(__VA_ARGS__)
#define CUMULUS_INTERNAL_E9(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E8(__VA_ARGS__)
#define CUMULUS_INTERNAL_E10(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E9(__VA_ARGS__)
#define CUMULUS_INTERNAL_E11(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E10(__VA_ARGS__)
#define CUMULUS_INTERNAL_E12(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E11(__VA_ARGS__)
#define CUMULUS_INTERNAL_E13(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E12(__VA_ARGS__)
#define CUMULUS_INTERNAL_E14(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E13(__VA_ARGS__)
#define CUMULUS_INTERNAL_E15(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E14(__VA_ARGS__)
#define CUMULUS_INTERNAL_E16(f, ...) CUMULUS_INTERNAL_REG(f) CUMULUS_INTERNAL_E15(__VA_ARGS__)

#define CUMULUS_REMOTE(...)                                                            \
  CUMULUS_INTERNAL_N(__VA_ARGS__, CUMULUS_INTERNAL_E16, CUMULUS_INTERNAL_E15,          \
                     CUMULUS_INTERNAL_E14, CUMULUS_INTERNAL_E13, CUMULUS_INTERNAL_E12, \
                     CUMULUS_INTERNAL_E11, CUMULUS_INTERNAL_E10, CUMULUS_INTERNAL_E9,  \
                     CUMULUS_INTERNAL_E8, CUMULUS_INTERNAL_E7, CUMULUS_INTERNAL_E6,    \
                     CUMULUS_INTERNAL_E5, CUMULUS_INTERNAL_E4, CUMULUS_INTERNAL_E3,    \
                     CUMULUS_INTERNAL_E2, CUMULUS_INTERNAL_E1)                         \
  (__VA_ARGS__)
