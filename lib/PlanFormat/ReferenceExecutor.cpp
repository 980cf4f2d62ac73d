//===- ReferenceExecutor.cpp ----------------------------------------------===//

#include "dsc/ReferenceExecutor.h"
#include "dsc/KernelRegistry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace dsc::reference {

using plan::TensorRef;

int64_t offsetOf(const TensorRef &R, int64_t Flat) {
  int64_t Off = int64_t(R.Offset);
  for (size_t K = R.Shape.size(); K-- > 0;) {
    int64_t D = R.Shape[K] ? R.Shape[K] : 1;
    Off += (Flat % D) * R.Strides[K];
    Flat /= D;
  }
  return Off;
}

float storedAs(double V, plan::DType T) {
  switch (T) {
  case plan::DType::I32:
  case plan::DType::I64:
    return float(int64_t(V));
  case plan::DType::U8:
    return V != 0 ? 1.0f : 0.0f;
  default:
    return float(V);
  }
}

std::vector<float> HostOperands::load(size_t I) const {
  const TensorRef &R = K.Inputs[I];
  std::vector<float> Out(size_t(plan::elements(R)));
  for (int64_t E = 0; E < int64_t(Out.size()); ++E)
    Out[size_t(E)] = Storage[R.Value][size_t(offsetOf(R, E))];
  return Out;
}

std::vector<int64_t> HostOperands::loadInts(size_t I) const {
  std::vector<float> F = load(I);
  return std::vector<int64_t>(F.begin(), F.end());
}

float HostOperands::input(size_t I, int64_t E) const {
  const TensorRef &R = K.Inputs[I];
  return Storage[R.Value][size_t(offsetOf(R, E))];
}

float &HostOperands::output(size_t O, int64_t E) {
  const TensorRef &R = K.Outputs[O];
  return Storage[R.Value][size_t(offsetOf(R, E))];
}

void HostOperands::store(size_t O, const std::vector<float> &V) {
  plan::DType T = outputType(O);
  for (int64_t E = 0; E < int64_t(V.size()); ++E)
    output(O, E) = storedAs(V[size_t(E)], T);
}

const float *HostOperands::inputData(size_t I) const {
  return Storage[K.Inputs[I].Value].data() + K.Inputs[I].Offset;
}

float *HostOperands::outputData(size_t O) {
  return Storage[K.Outputs[O].Value].data() + K.Outputs[O].Offset;
}

plan::DType HostOperands::outputType(size_t O) const {
  return Values[K.Outputs[O].Value].Type;
}


void Span::assign(const std::vector<float> &V) {
  std::memcpy(Data, V.data(), std::min(V.size(), Size) * sizeof(float));
}

Executor::Executor(const std::vector<plan::Value> &Values,
                   const std::vector<plan::Constant> &Constants)
    : Executor(Values, Constants,
               std::vector<uint64_t>(Values.size(), NoPlace), 0) {}

Executor::Executor(const std::vector<plan::Value> &Values,
                   const std::vector<plan::Constant> &Constants,
                   const std::vector<uint64_t> &Place, uint64_t ArenaFloats)
    : Values(Values), Own(Values.size()),
      Arena(size_t(ArenaFloats), std::numeric_limits<float>::quiet_NaN()),
      Storage(Values.size()) {
  for (size_t I = 0; I < Values.size(); ++I) {
    size_t N = size_t(Values[I].Elems);
    if (I < Place.size() && Place[I] != NoPlace) {
      if (Place[I] > Arena.size() || N > Arena.size() - Place[I]) {
        std::fprintf(stderr, "reference executor: value %zu lies outside "
                             "the arena\n", I);
        std::abort();
      }
      Storage[I] = Span(Arena.data() + Place[I], N);
    } else {
      Own[I].assign(N, 0.0f);
      Storage[I] = Span(Own[I].data(), N);
    }
  }
  fillConstants(Constants);
}

void Executor::fillConstants(const std::vector<plan::Constant> &Constants) {
  for (const plan::Constant &C : Constants) {
    const plan::Value &V = Values[C.Value];
    Span &S = Storage[C.Value];
    for (size_t K = 0; K < S.size(); ++K) {
      const uint8_t *P = C.Bytes.data() + K * plan::dtypeBytes(V.Type);
      if (V.Type == plan::DType::F32) {
        std::memcpy(&S[K], P, 4);
      } else if (V.Type == plan::DType::I32) {
        int32_t X;
        std::memcpy(&X, P, 4);
        S[K] = float(X);
      } else {
        S[K] = float(*P);
      }
    }
  }
}

std::string Executor::run(const plan::Kernel &K, uint64_t Seed) {
  HostOperands Ops(K, Storage, Values, Seed);
  return plan::kernelKindInfo(K.kind()).Reference(K, Ops);
}

} // namespace dsc::reference
