// A program of another project on harp's C++ Tensor API alone: computes
// through the JIT, then keeps a module's weights in a safetensors file and
// loads them into another.
#include "harp/API/Modules.h"
#include "harp/API/SafeTensors.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer-api FILE.safetensors\n");
    return 2;
  }
  auto a = harp::Tensor<float>::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  std::printf("sum(2a) = %g\n", double((a * 2.0f).sum().item()));

  harp::nn::Linear<float> model(3, 2), other(3, 2);
  harp::save_safetensors(argv[1], model.state_dict());
  other.load_state_dict(harp::load_safetensors<float>(argv[1]));
  bool same = model.state_dict()[0].second.data() ==
                  other.state_dict()[0].second.data() &&
              model.state_dict()[1].second.data() ==
                  other.state_dict()[1].second.data();
  std::printf("weights %s\n", same ? "loaded" : "differ");
  try {
    harp::load_safetensors<double>(argv[1]);
  } catch (const harp::Error &error) {
    std::printf("error: %s\n", error.what());
  }
  return same ? 0 : 1;
}
