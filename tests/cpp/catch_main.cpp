// The one Catch2 v2 main for every test binary (compiled once: it is the slowest TU to build).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
