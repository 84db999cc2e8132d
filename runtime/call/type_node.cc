// Type descriptors read back into trees (type_node.h).
#include "runtime/call/type_node.h"

#include "runtime/call/json_value.h"

namespace cumulus {

const TypeNode* TypeNode::FirstOpaque() const {
  if (kind == kOpaque) return this;
  for (const TypeNode& c : children) {
    if (const TypeNode* o = c.FirstOpaque()) return o;
  }
  return nullptr;
}

namespace {

std::string ShortName(const std::string& name) {
  // "{anonymous}::Config" (GCC; clang: "(anonymous namespace)::Config") reads as "Config";
  // named namespaces stay.
  std::string out = name;
  for (const std::string anon : {"{anonymous}::", "(anonymous namespace)::"}) {
    for (size_t at = out.find(anon); at != std::string::npos; at = out.find(anon)) {
      out.erase(at, anon.size());
    }
  }
  return out;
}

}  // namespace

std::string TypeNode::Display() const {
  auto list = [&](const char* open, const char* close) {
    std::string out = open;
    for (size_t i = 0; i < children.size(); ++i) {
      out += (i ? ", " : "") + children[i].Display();
    }
    return out + close;
  };
  switch (kind) {
    case kBool:
      return "bool";
    case kInt:
      return (is_signed ? "int" : "uint") + std::to_string(bits);
    case kFloat:
      return "float" + std::to_string(bits);
    case kString:
      return "string";
    case kVoid:
      return "void";
    case kVector:
      return "vector<" + children[0].Display() + ">";
    case kSet:
      return "set<" + children[0].Display() + ">";
    case kOptional:
      return "optional<" + children[0].Display() + ">";
    case kMap:
      return "map<" + children[0].Display() + ", " + children[1].Display() + ">";
    case kArray:
      return "array<" + children[0].Display() + ", " + std::to_string(length) + ">";
    case kTuple:
      return list("tuple<", ">");
    case kEnum:
      return ShortName(name) + " (enum of " + children[0].Display() + ")";
    case kStruct: {
      std::string out = ShortName(name) + "{";
      for (size_t i = 0; i < children.size(); ++i) {
        out += (i ? ", " : "") + field_names[i] + ": " + children[i].Display();
      }
      return out + "}";
    }
    case kOpaque:
      return ShortName(name) + " (no JSON form)";
  }
  return "?";
}

namespace {

class DescriptorParser {
 public:
  explicit DescriptorParser(std::string_view in) : in_(in) {}

  Result<TypeNode> Parse() {
    if (in_.size() > kMaxTypeDescriptorBytes) {
      return Status::InvalidArgument("a type descriptor of " + std::to_string(in_.size()) +
                                     " bytes is over the limit");
    }
    TypeNode t;
    if (!Type(&t, 0)) return Error();
    if (pos_ != in_.size()) {
      Fail("unexpected text after the type");
      return Error();
    }
    return t;
  }

 private:
  Status Error() const {
    return Status::InvalidArgument("bad type descriptor at offset " + std::to_string(pos_) + ": " +
                                   error_ + " in '" + std::string(in_.substr(0, 200)) + "'");
  }
  bool Fail(std::string why) {
    error_ = std::move(why);
    return false;
  }
  bool Eat(char c) {
    if (pos_ < in_.size() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return Fail(std::string("expected '") + c + "'");
  }
  std::string Word() {
    size_t start = pos_;
    while (pos_ < in_.size() &&
           ((in_[pos_] >= 'a' && in_[pos_] <= 'z') || (in_[pos_] >= '0' && in_[pos_] <= '9'))) {
      ++pos_;
    }
    return std::string(in_.substr(start, pos_ - start));
  }
  // A JSON string literal at pos_.
  bool Quoted(std::string* out) {
    if (pos_ >= in_.size() || in_[pos_] != '"') return Fail("expected a quoted name");
    size_t end = pos_ + 1;
    while (end < in_.size() && in_[end] != '"') end += in_[end] == '\\' ? 2 : 1;
    if (end >= in_.size()) return Fail("unterminated name");
    auto s = ParseJson(in_.substr(pos_, end + 1 - pos_));
    if (!s.ok()) return Fail("bad name");
    *out = s->text;
    pos_ = end + 1;
    return true;
  }
  bool Child(TypeNode* t, size_t depth) {
    t->children.emplace_back();
    return Type(&t->children.back(), depth + 1);
  }

  bool Type(TypeNode* t, size_t depth) {
    if (depth > kMaxTypeDepth) return Fail("nested too deeply");
    std::string w = Word();
    if (w == "bool") {
      t->kind = TypeNode::kBool;
    } else if (w == "string") {
      t->kind = TypeNode::kString;
    } else if (w == "void") {
      t->kind = TypeNode::kVoid;
    } else if (w == "int8" || w == "int16" || w == "int32" || w == "int64" || w == "uint8" ||
               w == "uint16" || w == "uint32" || w == "uint64") {
      t->kind = TypeNode::kInt;
      t->is_signed = w[0] == 'i';
      t->bits = std::stoi(w.substr(t->is_signed ? 3 : 4));
    } else if (w == "float32" || w == "float64") {
      t->kind = TypeNode::kFloat;
      t->bits = w == "float32" ? 32 : 64;
    } else if (w == "vector" || w == "set" || w == "optional") {
      t->kind = w == "vector" ? TypeNode::kVector
                : w == "set"  ? TypeNode::kSet
                              : TypeNode::kOptional;
      return Eat('<') && Child(t, depth) && Eat('>');
    } else if (w == "map") {
      t->kind = TypeNode::kMap;
      return Eat('<') && Child(t, depth) && Eat(',') && Child(t, depth) && Eat('>');
    } else if (w == "array") {
      t->kind = TypeNode::kArray;
      if (!Eat('<') || !Child(t, depth) || !Eat(',')) return false;
      std::string n = Word();
      if (n.empty() || n.size() > 18 || n.find_first_not_of("0123456789") != std::string::npos) {
        return Fail("expected an array length");
      }
      t->length = std::stoull(n);
      return Eat('>');
    } else if (w == "tuple") {
      t->kind = TypeNode::kTuple;
      if (!Eat('<')) return false;
      if (pos_ < in_.size() && in_[pos_] == '>') return Eat('>');
      do {
        if (!Child(t, depth)) return false;
      } while (pos_ < in_.size() && in_[pos_] == ',' && ++pos_);
      return Eat('>');
    } else if (w == "enum") {
      t->kind = TypeNode::kEnum;
      if (!Quoted(&t->name) || !Eat('<') || !Child(t, depth) || !Eat('>')) return false;
      if (t->children[0].kind != TypeNode::kInt) return Fail("an enum's type is not an integer");
    } else if (w == "struct") {
      t->kind = TypeNode::kStruct;
      if (!Quoted(&t->name) || !Eat('{')) return false;
      if (pos_ < in_.size() && in_[pos_] == '}') return Eat('}');
      do {
        t->field_names.emplace_back();
        if (!Quoted(&t->field_names.back()) || !Eat(':') || !Child(t, depth)) return false;
      } while (pos_ < in_.size() && in_[pos_] == ',' && ++pos_);
      return Eat('}');
    } else if (w == "opaque") {
      t->kind = TypeNode::kOpaque;
      return Quoted(&t->name);
    } else {
      return Fail(w.empty() ? "expected a type" : "unknown type '" + w + "'");
    }
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

Result<TypeNode> ParseTypeDescriptor(std::string_view text) {
  return DescriptorParser(text).Parse();
}

}  // namespace cumulus
