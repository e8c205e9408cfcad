# The compile cache's direct mode (POSIX sh, sourced before compile_cache.sh, which calls it).
#
# As ccache's direct mode: a compile seen before is known by its source, its arguments and the
# files its preprocessor read, without running the preprocessor again (about half of a kernel
# object's compile). Its manifest, `<cache>/<xx>/<direct key>/`, holds:
#   key      the key of the compile's entry
#   headers  every file the preprocessor read, with its checksum (sha256sum's format)
#   dirs     every folder an #include could have been looked up in: the search folders (the
#            arguments', CPATH's and the compiler's own) and every folder holding a file read
#            (a quoted #include looks beside its file first)
#   names    a checksum of which of the names the compile included are now in those folders
# It is used only when every file read is the same and no name has appeared or gone where the
# preprocessor looked: a header of the same name put earlier in the search path (as MOFED's
# compat headers shadow the kernel's) is a change, so the direct key is never stale. A name is
# every way a file read can be spelled from a folder above (`linux/x.h` and `x.h` for
# `include/linux/x.h`): more than the preprocessor looked up, never fewer. A compile whose
# source or headers use __DATE__, __TIME__ or __has_include (whose answer no list of files
# read shows) gets no manifest, and the entries its preprocessed key names serve it as before.
#
# Uses: direct (cleared when an argument makes the search unknown: --sysroot, -iprefix, ...),
# search and machine (set while reading the arguments), id, probe, src, work, state, cache.

# The direct key: the compiler, the working folder (not a probe's), the arguments, the
# variables that change the search, and the source.
direct_input() {
    echo "imgbuild compile cache 1 direct${probe:+ probe}"
    echo "$id"
    [ -n "$probe" ] || pwd -P
    printf '%s\n' "$@"
    echo "LANG=$LANG LC_ALL=$LC_ALL LC_MESSAGES=$LC_MESSAGES"
    echo "CPATH=$CPATH C_INCLUDE_PATH=$C_INCLUDE_PATH CPLUS_INCLUDE_PATH=$CPLUS_INCLUDE_PATH"
    cat "$src"
}

# direct_hit ARGS: sets key and entry to the compile a valid manifest names; fails otherwise.
direct_hit() {
    [ -n "$direct" ] || return 1
    for tool in awk find xargs sort tr sed; do
        command -v "$tool" >/dev/null 2>&1 || { direct= && return 1; }
    done
    dkey=$(hashed direct_input "$@") || { direct= && return 1; }
    dentry=$(shard "$dkey")/$dkey
    [ -f "$dentry/sums" ] && (cd "$dentry" && sha256sum -c sums) >/dev/null 2>&1 || return 1
    { [ ! -s "$dentry/headers" ] || sha256sum -c "$dentry/headers" >/dev/null 2>&1; } || return 1
    [ "$(names_state "$dentry/dirs" "$dentry/headers")" = "$(cat "$dentry/names")" ] || return 1
    key=$(cat "$dentry/key") || return 1
    case $key in *[!0-9a-f]*) return 1 ;; esac
    [ "${#key}" = 64 ] || return 1
    entry=$(shard "$key")/$key
    touch "$dentry" 2>/dev/null
    return 0
}

# names_state DIRS HEADERS: the checksum of which included names are in which search folders.
# Every file read, under every folder of DIRS above it, gives a name (the rest of its path);
# each folder of DIRS is then looked in for each name.
names_state() {
    awk -v names="$work/names" '
        FNR == 1 { part++ }
        part == 1 { dirs[++n] = $0; next }
        {
            path = substr($0, 67)
            for (i = 1; i <= n; i++) {
                d = dirs[i]
                if (d == "") {
                    if (substr(path, 1, 1) != "/") spelled[path] = 1
                } else if (substr(path, 1, length(d) + 1) == d "/") {
                    spelled[substr(path, length(d) + 2)] = 1
                }
            }
        }
        END {
            printf "" > names
            for (s in spelled) {
                base = s
                sub(/.*\//, "", base)
                print base > names
                under = s
                if (!sub(/\/[^\/]*$/, "", under)) under = ""
                subs[under] = 1
            }
            close(names)
            for (i = 1; i <= n; i++) {
                for (s in subs) {
                    d = (dirs[i] == "") ? "." : dirs[i]
                    where = (s == "") ? d : (d "/" s)
                    if (where ~ /^-/) where = "./" where
                    if (!(where in seen)) { seen[where] = 1; print where }
                }
            }
        }' "$1" "$2" >"$work/where" || return 1
    tr '\n' '\0' <"$work/where" |
        xargs -0 -r sh -c 'exec find -H "$@" -maxdepth 1 -mindepth 1 2>/dev/null' find |
        awk -v names="$work/names" '
            BEGIN { while ((getline line < names) > 0) wanted[line] = 1 }
            { base = $0; sub(/.*\//, "", base); if (base in wanted) print }' |
        LC_ALL=C sort | sha256sum | cut -c1-64
}

# The compiler's own search folders, asked once per sandbox for its machine options (-m32
# searches others).
system_dirs() {
    memo=$state/search.$(printf '%s\n' "$id" "$machine" | sha256sum | cut -c1-16)
    if [ ! -f "$memo" ]; then
        # shellcheck disable=SC2086 # the machine options, one word each
        for lang in c c++; do
            "$real" $machine -x "$lang" -E -v -o /dev/null /dev/null </dev/null 2>&1
        done | awk '/search starts here:$/ { on = 1; next }
                    /^End of search list/ { on = 0; found = 1 }
                    on { sub(/^ /, ""); print }
                    END { exit !found }' >"$memo.$$" && mv -f "$memo.$$" "$memo" ||
            { rm -f "$memo.$$" && return 1; }
    fi
    cat "$memo"
}

# search_list HEADERS: DIRS of a manifest, each folder once, in search order.
search_list() {
    {
        printf '%s' "$search"
        for paths in "$CPATH" "$C_INCLUDE_PATH" "$CPLUS_INCLUDE_PATH"; do
            [ -z "$paths" ] || printf '%s\n' "$paths" | tr ':' '\n'
        done
        system_dirs || return 1
        {
            echo "$src"
            awk '{ print substr($0, 67) }' "$1"
        } | awk '{ if (!sub(/\/[^\/]*$/, "")) $0 = ""; print }'
        echo
    } | awk '{ if ($0 != "/") sub(/\/+$/, "") } !seen[$0]++'
}

# remember: writes the manifest of this compile, whose entry is made.
remember() {
    [ -n "$direct" ] && [ -n "$dkey" ] && [ -f "$entry/sums" ] || return 0
    # The files the preprocessor read, each once, but the source (the direct key holds it).
    awk 'NR == 1 { main = $0 }
        /^# [0-9]+ "/ {
            path = $0
            sub(/^# [0-9]+ "/, "", path)
            if (index(path, "\\")) { bad = 1; exit }
            sub(/".*$/, "", path)
            # Not a file: <built-in>, <command-line>; the working folder (`/dir//`, with -g).
            if (path ~ /^<.*>$/ || path ~ /\/\/$/ || index(main, "\"" path "\"")) next
            if (path in seen) next
            seen[path] = 1
            print path
        }
        END { exit bad }' "$work/i" >"$work/read" || return 0
    if { echo "$src" && cat "$work/read"; } | tr '\n' '\0' |
        xargs -0 grep -l -F -e __DATE__ -e __TIME__ -e __has_include -- 2>/dev/null | grep -q .; then
        return 0
    fi
    mkdir -p "${dentry%/*}" 2>/dev/null || return 0
    stage=$(mktemp -d "${dentry%/*}/.new.XXXXXX") || return 0
    if tr '\n' '\0' <"$work/read" | xargs -0 -r sha256sum -- >"$stage/headers" &&
        search_list "$stage/headers" >"$stage/dirs" &&
        names_state "$stage/dirs" "$stage/headers" >"$stage/names" &&
        echo "$key" >"$stage/key" &&
        (cd "$stage" && sha256sum -- dirs headers key names >sums); then
        rm -rf "$dentry"
        mv -T "$stage" "$dentry" 2>/dev/null && return 0
    fi
    rm -rf "$stage"
}
