// peakcast CLI: parses arguments and calls the library. Subcommands are added in commands_*.cpp.
#include <iostream>

int main(int argc, char** argv) {
  std::cerr << "peakcast: under construction\n";
  return 2;
}
