package tool

// shellPath is the shell that runs the model's commands: Windows has no
// /bin/sh, so the sh found on PATH (Git for Windows' usr\bin\sh.exe; hub
// needs Git anyway). The model writes POSIX shell, as on the other
// platforms.
const shellPath = "sh"
