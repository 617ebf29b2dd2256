// Every program checked against the graph before anything is laid out: tensors mapped, shapes,
// types and replicas that fit, each error naming the program step and the tensor.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "sdk/compiler/compilation.h"

namespace ipu::sdk {

const TensorInfo* Compilation::require_mapped(Tensor t, const char* role) const {
  const TensorInfo& i = info(t);
  if (i.mapping.empty())
    throw GraphError(fmt::format("{} tensor '{}' is not mapped to any tile", role, i.name));
  return &i;
}

void Compilation::check(const Program& p) const {
  const auto same_size = [&](const char* what, const TensorInfo* s, const TensorInfo* d,
                             size_t factor_s, size_t factor_d) {
    if (s->elements * factor_s != d->elements * factor_d || s->type != d->type)
      throw GraphError(fmt::format(
          "{} from '{}' ({} x {}) to '{}' ({} x {}): {}", what, s->name, s->elements,
          dtype_name(s->type), d->name, d->elements, dtype_name(d->type),
          factor_s == factor_d ? std::string("shapes or types differ")
          : factor_s > factor_d
              ? fmt::format("the destination must have {} times the source's elements "
                            "(one chunk per replica), of the same type",
                            factor_s)
              : fmt::format("the source must have {} times the destination's elements (one "
                            "chunk per replica), of the same type",
                            factor_d)));
  };
  const auto whole_words = [&](const char* what, const TensorInfo* t) {
    if (t->elements * dtype_size(t->type) % 4 != 0)
      throw GraphError(fmt::format(
          "{} of '{}' ({} x {}): collectives move whole 32-bit words; give it an even number of "
          "elements",
          what, t->name, t->elements, dtype_name(t->type)));
  };
  const auto collective_type = [&](const char* what, const TensorInfo* t, CollectiveOp op) {
    if (t->type != DType::kF32 && t->type != DType::kI32 && t->type != DType::kF16)
      throw GraphError(fmt::format("{} of '{}' ({}): collectives reduce f32, f16 or i32 tensors",
                                   what, t->name, dtype_name(t->type)));
    if (op == CollectiveOp::kMean && t->type == DType::kI32)
      throw GraphError(fmt::format("{} of '{}' ({}): a mean needs an f32 or f16 tensor", what,
                                   t->name, dtype_name(t->type)));
    whole_words(what, t);
  };
  const auto ring_only = [](const char* what, const TensorInfo* t, CollectiveOptions o) {
    if (o.algorithm == CollectiveAlgorithm::kDirect ||
        o.algorithm == CollectiveAlgorithm::kHalvingDoubling)
      throw GraphError(
          fmt::format("{} of '{}': the {} algorithm serves AllReduce alone; a {} "
                      "runs on a ring",
                      what, t->name, collective_algorithm_name(o.algorithm), what));
  };
  switch (p.kind) {
    case Program::Kind::kBroadcast: {
      const TensorInfo *s = require_mapped(p.source, "Broadcast source"),
                       *d = require_mapped(p.destination, "Broadcast destination");
      if (d->elements % s->elements != 0 || s->type != d->type)
        throw GraphError(fmt::format(
            "Broadcast from '{}' ({} x {}) to '{}' ({} x {}): the destination is not a "
            "whole number of source-sized chunks of the same type",
            s->name, s->elements, dtype_name(s->type), d->name, d->elements, dtype_name(d->type)));
      break;
    }
    case Program::Kind::kCopy:
      if (p.pairs.empty()) {
        same_size("Copy", require_mapped(p.source, "Copy source"),
                  require_mapped(p.destination, "Copy destination"), 1, 1);
        break;
      }
      for (size_t i = 0; i < p.pairs.size(); ++i) {
        const auto& [from, to] = p.pairs[i];
        const TensorInfo *s = require_mapped(from.tensor, "Copy source"),
                         *d = require_mapped(to.tensor, "Copy destination");
        for (const Region& r : {from, to})
          if (r.begin >= r.end || r.end > info(r.tensor).elements)
            throw GraphError(
                fmt::format("Copy pair {}: region [{}, {}) is not inside '{}' ({} elements)", i,
                            r.begin, r.end, info(r.tensor).name, info(r.tensor).elements));
        if (from.end - from.begin != to.end - to.begin || s->type != d->type)
          throw GraphError(fmt::format(
              "Copy pair {} from '{}' [{}, {}) ({}) to '{}' [{}, {}) ({}): sizes or types differ",
              i, s->name, from.begin, from.end, dtype_name(s->type), d->name, to.begin, to.end,
              dtype_name(d->type)));
      }
      break;
    case Program::Kind::kCrossReplicaCopy: {
      same_size("CrossReplicaCopy", require_mapped(p.source, "CrossReplicaCopy source"),
                require_mapped(p.destination, "CrossReplicaCopy destination"), 1, 1);
      std::vector<bool> seen(replicas_, false);
      if (p.replica_map.size() != replicas_)
        throw GraphError(fmt::format(
            "CrossReplicaCopy from '{}': the replica map has {} entries for {} replicas",
            info(p.source).name, p.replica_map.size(), replicas_));
      for (size_t r = 0; r < p.replica_map.size(); ++r) {
        const unsigned to = p.replica_map[r];
        if (to >= replicas_ || seen[to])
          throw GraphError(fmt::format(
              "CrossReplicaCopy from '{}': replica {} sends to replica {}, {} (the map must be "
              "a permutation of replicas 0-{})",
              info(p.source).name, r, to, to >= replicas_ ? "which does not exist" : "twice",
              replicas_ - 1));
        seen[to] = true;
      }
      break;
    }
    case Program::Kind::kAllReduce: {
      const TensorInfo* s = require_mapped(p.source, "AllReduce");
      collective_type("AllReduce", s, p.op);
      const CollectiveAlgorithm a = p.collective.algorithm;
      if (a == CollectiveAlgorithm::kDirect && replicas_ > 2)
        throw GraphError(
            fmt::format("AllReduce of '{}': the direct algorithm takes 2 replicas, not {}", s->name,
                        replicas_));
      if (a == CollectiveAlgorithm::kHalvingDoubling && (replicas_ & (replicas_ - 1)) != 0)
        throw GraphError(fmt::format(
            "AllReduce of '{}': halving-doubling takes a power of two of replicas, not {}", s->name,
            replicas_));
      break;
    }
    case Program::Kind::kReduceScatter: {
      const TensorInfo* s = require_mapped(p.source, "ReduceScatter source");
      ring_only("ReduceScatter", s, p.collective);
      collective_type("ReduceScatter", s, p.op);
      const TensorInfo* d = require_mapped(p.destination, "ReduceScatter destination");
      same_size("ReduceScatter", s, d, 1, replicas_);
      whole_words("ReduceScatter", d);
      break;
    }
    case Program::Kind::kAllGather: {
      const TensorInfo* s = require_mapped(p.source, "AllGather source");
      ring_only("AllGather", s, p.collective);
      // Chunks move as whole words: any 32-bit type, or f16 in pairs.
      if (dtype_size(s->type) != 4 && s->type != DType::kF16)
        throw GraphError(fmt::format(
            "AllGather of '{}' ({}): gathers move 32-bit elements (f32, i32, u32) or f16 pairs",
            s->name, dtype_name(s->type)));
      whole_words("AllGather", s);
      same_size("AllGather", s, require_mapped(p.destination, "AllGather destination"), replicas_,
                1);
      break;
    }
    case Program::Kind::kHostWrite:
    case Program::Kind::kHostRead: {
      const bool write = p.kind == Program::Kind::kHostWrite;
      const auto st = graph_.streams().find(p.stream);
      if (st == graph_.streams().end())
        throw GraphError(fmt::format("unknown stream '{}'", p.stream));
      const TensorInfo* t =
          require_mapped(write ? p.destination : p.source, write ? "HostWrite" : "HostRead");
      if ((st->second.direction == StreamDirection::kHostToDevice) != write)
        throw GraphError(fmt::format("stream '{}' goes the other way", p.stream));
      if (st->second.elements != t->elements || st->second.type != t->type)
        throw GraphError(fmt::format("stream '{}' ({} x {}) does not match tensor '{}' ({} x {})",
                                     p.stream, st->second.elements, dtype_name(st->second.type),
                                     t->name, t->elements, dtype_name(t->type)));
      break;
    }
    case Program::Kind::kExecute:
      if (p.compute_set.id >= graph_.compute_sets().size())
        throw GraphError("Execute of an unknown compute set");
      break;
    case Program::Kind::kAllReduceAcrossTiles:
    case Program::Kind::kReduceScatterAcrossTiles: {
      const bool all = p.kind == Program::Kind::kAllReduceAcrossTiles;
      const char* what = all ? "AllReduceAcrossTiles" : "ReduceScatterAcrossTiles";
      const TensorInfo* d = require_mapped(p.source, what);
      if (d->type != DType::kF32 && d->type != DType::kI32)
        throw GraphError(fmt::format("{} of '{}' ({}): across tiles, collectives reduce f32 or i32",
                                     what, d->name, dtype_name(d->type)));
      if (p.op == CollectiveOp::kMean && d->type != DType::kF32)
        throw GraphError(fmt::format("{} of '{}' ({}): a mean needs an f32 tensor", what, d->name,
                                     dtype_name(d->type)));
      if (d->shape.size() != 2 || d->shape[0] == 0 || d->shape[1] % d->shape[0] != 0)
        throw GraphError(
            fmt::format("{} of '{}': the tensor must have shape {{G, n}} (G rows, one per tile's "
                        "slice) with n a "
                        "multiple of G, so each row splits into G chunks",
                        what, d->name));
      if (!all) {
        const TensorInfo* o = require_mapped(p.destination, what);
        if (o->elements != d->shape[1] || o->type != d->type)
          throw GraphError(fmt::format(
              "{} from '{}' ({} x {} {}) to '{}' ({} x {}): the destination needs {} elements, one "
              "chunk per row",
              what, d->name, d->shape[0], d->shape[1], dtype_name(d->type), o->name, o->elements,
              dtype_name(o->type), d->shape[1]));
      }
      break;
    }
    case Program::Kind::kCopyToRemote:
    case Program::Kind::kCopyFromRemote: {
      const bool to = p.kind == Program::Kind::kCopyToRemote;
      const char* what = to ? "CopyToRemote" : "CopyFromRemote";
      const RemoteBufferInfo& b = graph_.remote_buffer(p.remote);
      const TensorInfo* t = require_mapped(to ? p.source : p.destination, what);
      if (t->elements != b.elements || t->type != b.type)
        throw GraphError(
            fmt::format("{} between '{}' ({} x {}) and remote buffer '{}' ({} x {}): "
                        "the shapes or types differ",
                        what, t->name, t->elements, dtype_name(t->type), b.name, b.elements,
                        dtype_name(b.type)));
      if (p.entry >= b.entries)
        throw GraphError(fmt::format(
            "{} of '{}': entry {} of remote buffer '{}' is out of range (it has {} entr{}, 0-{})",
            what, t->name, p.entry, b.name, b.entries, b.entries == 1 ? "y" : "ies",
            b.entries - 1));
      break;
    }
    case Program::Kind::kCall: {
      const FunctionInfo& f = graph_.function(p.function);
      // The body runs from wherever it is called: it keeps no host transfer (each belongs to
      // one program) and calls nothing (its scratch tensors share memory with other functions').
      const std::function<void(const Program&)> plain = [&](const Program& q) {
        if (q.kind == Program::Kind::kCall)
          throw GraphError(
              fmt::format("function '{}' calls function '{}': a function's body may "
                          "not call a function",
                          f.name, graph_.function(q.function).name));
        if (q.kind == Program::Kind::kHostWrite || q.kind == Program::Kind::kHostRead)
          throw GraphError(
              fmt::format("function '{}' moves host stream '{}': a host stream's data moves in the "
                          "program that runs, not in a function",
                          f.name, q.stream));
        for (const Program& c : q.body) plain(c);
      };
      plain(*f.body);
      check(*f.body);
      break;
    }
    default: break;
  }
  for (const Program& c : p.body) check(c);
}

}  // namespace ipu::sdk
