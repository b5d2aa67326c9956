// Placeholder until the subcommands land.
#include <cstdio>
int main() { std::puts("lrrt"); return 0; }
