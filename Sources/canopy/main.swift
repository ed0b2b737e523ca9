// canopy -- the command-line entry point: `canopy <command> [options]`.

#if canImport(Glibc)
    import Glibc
#endif

exit(await CommandLineTool.runMain(arguments: Array(CommandLine.arguments.dropFirst())))
