// canopy -- the command-line entry point: `canopy <command> [options]`.

#if canImport(Glibc)
    import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "serve" {
    // Block SIGTERM/SIGINT in every thread before any is started: the daemon's event loop receives them
    // through a signalfd and shuts down gracefully, instead of the process dying on the default action.
    var mask = sigset_t()
    sigemptyset(&mask)
    sigaddset(&mask, SIGTERM)
    sigaddset(&mask, SIGINT)
    pthread_sigmask(SIG_BLOCK, &mask, nil)
}
signal(SIGPIPE, SIG_IGN)
exit(CommandLineTool.runMain(arguments: arguments))
