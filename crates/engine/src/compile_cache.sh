# imgbuild's compile cache (POSIX sh: it runs with the image's own shell and tools).
#
# A compile of one C or assembler source to one object (-c -o) is keyed as ccache keys it: the
# compiler's identity (its driver, cc1 and assembler, by content), the working folder, every
# argument, the language settings, and the preprocessed source. A key seen before gives the
# object, the dependency file and the messages kept from the compile that made them; otherwise
# the compiler runs and what it made is kept. Anything else (linking, -E, a source from stdin
# or /dev/null, an option whose output the cache does not keep) runs the compiler as it is.
# An entry whose checksums do not match is removed and the compile runs again. Two builds that
# miss the same key at once compile it once: the first holds the key's lock, the other waits.
# A compile seen before is found first without the preprocessor, by its source, its arguments
# and the manifest of the files it read (compile_cache_direct.sh, sourced before this file).
#
# A configure probe named after its shell's PID (NVIDIA's conftest.sh compiles some three
# hundred `conftest$$.c` against the kernel headers, each time a driver builds, with flags
# holding another such PID) is keyed with those names taken out of its arguments and its
# source, and without the working folder: the
# probe only asks whether the object is made. A probe that fails as a compile error does (exit
# status 1, a fact of the source and the compiler, as its success is) is kept too, with its
# messages, and served as the same failure.
#
# Set by the shim that sources this file: real (the compiler's path), cache (the entries'
# folder), state (a folder of this sandbox's own, for the identity memo and the hit log).

[ -x "$real" ] || { echo "${0##*/}: not found" >&2; exit 127; }
passthrough() { exec "$real" "$@"; }
for tool in sha256sum mktemp grep cut cp mv mkdir cat stat touch rm; do
    command -v "$tool" >/dev/null 2>&1 || passthrough "$@"
done
[ -w "$cache" ] || passthrough "$@"
[ -z "${GCC_COMPARE_DEBUG}${DEPENDENCIES_OUTPUT}${SUNPRO_DEPENDENCIES}${COMPILER_PATH}${GCC_EXEC_PREFIX}" ] ||
    passthrough "$@"

# What the arguments ask for: one source, -c, -o FILE, and the dependency file's name; the
# folders they add to the include search (for the direct mode below), one a line.
compile= out= dep= md= src= sources=0 cacheable=1 takes= direct=1 search= machine= dkey= served=
newline='
'
search_dir() {
    case $1 in
        *"$newline"* | "") direct= ;;
        *) search=$search$1$newline ;;
    esac
}
for arg do
    if [ -n "$takes" ]; then
        case $takes in
            -o) out=$arg ;;
            -MF) dep=$arg ;;
            -I | -isystem | -idirafter | -iquote) search_dir "$arg" ;;
            -imacros | -isysroot | -iprefix | -iwithprefix | -iwithprefixbefore | -imultilib) direct= ;;
        esac
        takes=
        continue
    fi
    case $arg in
        -c) compile=1 ;;
        -o | -MF | -MT | -MQ | -x | -include | -imacros | -I | -isystem | -idirafter | -iquote | \
            -D | -U | -Xpreprocessor | -Xassembler | -Xlinker | -L | -l | -T | -u | -z | -e | \
            --param | -aux-info | -isysroot | -iprefix | -iwithprefix | -iwithprefixbefore | \
            -imultilib) takes=$arg ;;
        -I-* | --sysroot* | -iwithprefix* | -iprefix* | -imultilib* | -isysroot* | -I=* | \
            -isystem=* | -idirafter=* | -iquote=* | --include-directory*) direct= ;;
        -I*) search_dir "${arg#-I}" ;;
        -isystem*) search_dir "${arg#-isystem}" ;;
        -idirafter*) search_dir "${arg#-idirafter}" ;;
        -iquote*) search_dir "${arg#-iquote}" ;;
        -o*) out=${arg#-o} ;;
        -MF*) dep=${arg#-MF} ;;
        -Wp,-MD,*) dep=${arg#-Wp,-MD,} ;;
        -Wp,-MMD,*) dep=${arg#-Wp,-MMD,} ;;
        -MD | -MMD) md=1 ;;
        -m*' '*) direct= ;;
        -m*) machine="$machine $arg" ;;
        -E | -S | -M | -MM | -save-temps* | -fdump-* | -gsplit-dwarf | -fstack-usage | \
            -ftest-coverage | --coverage | -fprofile-* | -fauto-profile* | -fcallgraph-info* | \
            -fsyntax-only | -fplugin* | -specs* | -wrapper | -v | '-###' | --help* | --version | \
            -dump* | -print-* | -Wa,*-a* | @* | -) cacheable= ;;
        -*) ;;
        *) sources=$((sources + 1)) src=$arg ;;
    esac
done
[ -n "$cacheable" ] && [ -n "$compile" ] && [ "$sources" = 1 ] && [ -f "$src" ] &&
    [ "$out" != - ] || passthrough "$@"
probe=
case ${src##*/} in
    conftest[0-9]*.c)
        probe=${src##*/}
        probe=${probe%.c}
        case $probe in conftest*[!0-9]*) passthrough "$@" ;; esac
        command -v sed >/dev/null 2>&1 || passthrough "$@" ;;
esac
case $src in
    *.c | *.S | *.i | *.cc | *.cpp | *.cxx | *.C) ;;
    *) passthrough "$@" ;;
esac
# Without -o, the object is the source's name with .o, in the working folder (gcc's rule).
[ -n "$out" ] || { out=${src##*/} && out=${out%.*}.o; }
[ -n "$md" ] && [ -z "$dep" ] && dep=${out%.*}.d

# The arguments without the output and the dependency options, with -E: the preprocessed
# source on stdout.
preprocess() {
    skip=
    for arg do
        shift
        if [ -n "$skip" ]; then skip= && continue; fi
        case $arg in
            -c | -MD | -MMD | -MP) continue ;;
            -o | -MF | -MT | -MQ) skip=1 && continue ;;
            -o* | -MF* | -MT* | -MQ* | -Wp,-MD,* | -Wp,-MMD,*) continue ;;
        esac
        set -- "$@" "$arg"
    done
    "$real" "$@" -E -o -
}

# The compiler's identity: the content of its driver, cc1 (cc1plus) and assembler, hashed once
# per sandbox for files of the same size, time and inode. Where the driver finds the others is
# asked once per driver file (three runs of the driver a compile saves).
identity() {
    programs=$state/programs.$(stat -L -c '%s-%Y-%i' "$real") || return 1
    if [ ! -s "$programs" ]; then
        proper=$("$real" -print-prog-name=cc1) && cplus=$("$real" -print-prog-name=cc1plus) &&
            as=$(command -v "$("$real" -print-prog-name=as)") || return 1
        printf '%s\n' "$real" "$proper" "$cplus" "$as" >"$programs.$$" &&
            mv -f "$programs.$$" "$programs" || return 1
    fi
    # Each that is there (cc1plus only with g++).
    set --
    while IFS= read -r program; do
        [ -f "$program" ] && set -- "$@" "$program"
    done <"$programs"
    memo=$state/identity.$(stat -L -c '%n %s %Y %i' "$@" | sha256sum | cut -c1-64) || return 1
    if [ ! -s "$memo" ]; then
        sha256sum "$@" >"$memo.$$" && mv -f "$memo.$$" "$memo" || return 1
    fi
    cat "$memo"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/imgbuild-cc.XXXXXX") || passthrough "$@"
lock=
trap 'rm -rf "$work" ${lock:+"$lock"}' EXIT
id=$(identity) || { rm -rf "$work"; passthrough "$@"; }
# What the key hashes: for a probe, every PID-named `conftest<pid>` is `conftest#` (its file's,
# and the one in NVIDIA's -DKBUILD_BASENAME, the PID of the conftest.sh that made the flags).
key_input() {
    if [ -n "$probe" ]; then
        echo "imgbuild compile cache 1 probe"
    else
        echo "imgbuild compile cache 1"
    fi
    echo "$id"
    [ -n "$probe" ] || pwd -P
    printf '%s\n' "$@"
    echo "LANG=$LANG LC_ALL=$LC_ALL LC_MESSAGES=$LC_MESSAGES"
    cat "$work/i"
}
# hashed: the key of what a function prints, a probe's PID-named files as `conftest#`.
hashed() {
    if [ -n "$probe" ]; then
        "$@" | sed 's/conftest[0-9][0-9]*/conftest#/g' | sha256sum | cut -c1-64
    else
        "$@" | sha256sum | cut -c1-64
    fi
}
# shard KEY: the folder of KEY's entry (`<cache>/<first two>/`).
shard() { echo "$cache/${1%"${1#??}"}"; }

# The sandbox's log: what each compile found, under which key (the registry cache shares the
# entries a role used).
note() { echo "$1 $key $src" >>"$state/log" 2>/dev/null; }

# The entry's messages: a probe's name in them is the compile's own.
messages() {
    if [ -n "$probe" ]; then
        sed "s/conftest#/$probe/g" "$entry/err"
    else
        cat "$entry/err"
    fi
}

# A hit: when the entry's files are whole (their checksums match), they are copied to their
# places, the compile's messages shown, and the shim ends. Otherwise it returns.
serve() {
    [ -f "$entry/sums" ] && (cd "$entry" && sha256sum -c sums) >/dev/null 2>&1 || return 1
    if [ -f "$entry/failed" ]; then
        messages >&2
        touch "$entry" 2>/dev/null
        note hit
        [ -n "$served" ] || remember
        exit 1
    fi
    if cp "$entry/obj" "$out.imgbuild-cc.$$" && mv -f "$out.imgbuild-cc.$$" "$out" &&
        { [ -z "$dep" ] || { cp "$entry/dep" "$dep.imgbuild-cc.$$" && mv -f "$dep.imgbuild-cc.$$" "$dep"; }; }; then
        messages >&2
        touch "$entry" 2>/dev/null
        note hit
        [ -n "$served" ] || remember
        exit 0
    fi
    rm -rf "$out.imgbuild-cc.$$" "$dep.imgbuild-cc.$$" "$work"
    exec "$real" "$@"
}

# A compile known without preprocessing it (see compile_cache_direct.sh).
if direct_hit "$@"; then
    served=direct
    serve "$@"
fi
preprocess "$@" >"$work/i" 2>/dev/null || { rm -rf "$work"; passthrough "$@"; }
grep -q '\.incbin' "$work/i" && { rm -rf "$work"; passthrough "$@"; }
key=$(hashed key_input "$@") || { rm -rf "$work"; passthrough "$@"; }
entry=$(shard "$key")/$key
served=
serve "$@"
if [ -f "$entry/sums" ]; then
    note damaged
    rm -rf "$entry"
fi

# Another build compiling this key now (a neighbour in a matrix, the signed and the unsigned
# build of one driver) holds its lock: wait for it, then take what it made. The lock is flock's,
# let go when the shim holding it exits however it ends; without flock each compiles.
if command -v flock >/dev/null 2>&1 && mkdir -p "${entry%/*}" 2>/dev/null &&
    touch "${entry%/*}/.$key.lock" 2>/dev/null; then
    exec 9>>"${entry%/*}/.$key.lock"
    flock -w 3600 9 && lock=${entry%/*}/.$key.lock
    serve "$@"
fi

# keep WHAT: the entry of a compile, its messages (`err`) and what the function WHAT puts beside
# them, renamed into place when whole.
keep() {
    note miss
    mkdir -p "${entry%/*}" 2>/dev/null || return 0
    stage=$(mktemp -d "${entry%/*}/.new.XXXXXX") || return 0
    if keep_messages && "$1" && (cd "$stage" && set -- * && sha256sum -- "$@" >sums) &&
        [ ! -e "$entry" ] && mv "$stage" "$entry"; then
        return 0
    fi
    rm -rf "$stage"
}
# The compile's messages, a probe's name in them as in its key.
keep_messages() {
    if [ -n "$probe" ]; then
        sed 's/conftest[0-9][0-9]*/conftest#/g' "$work/err" >"$stage/err"
    else
        cp "$work/err" "$stage/err"
    fi
}
# What a compile made: the object and its dependency file.
made() {
    cp "$out" "$stage/obj" && { [ -z "$dep" ] || cp "$dep" "$stage/dep"; }
}
# A probe's compile error: served as the same failure.
failed() { echo 1 >"$stage/failed"; }

# A miss: compile, then keep what the compile made.
"$real" "$@" 2>"$work/err" 9>&-
status=$?
cat "$work/err" >&2
if [ "$status" != 0 ]; then
    [ -n "$probe" ] && [ "$status" = 1 ] && [ ! -e "$out" ] && keep failed && remember
    exit "$status"
fi
[ -f "$out" ] && { [ -z "$dep" ] || [ -f "$dep" ]; } || exit 0
keep made && remember
exit 0
