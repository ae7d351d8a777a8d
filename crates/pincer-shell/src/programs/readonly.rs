//! Read-only programs and their harmless options (GNU coreutils 9, GNU
//! grep 3, diffutils, util-linux, procps, binutils `strings`, jq 1.6–1.7,
//! as shipped by Debian 12).
//!
//! A program here is low only when every option it is given is in its
//! list; an unknown option is medium ("not among the options known to be
//! harmless"): it may be one a newer version added, or a typo that fails.
//! Most of these programs have no option that writes, runs a program or
//! connects at all (their spec is *total*), so an argument from an
//! expansion or a glob, which could turn into any option, is still low.

use super::opts::{Paths, Spec, parse};
use super::{Rule, RuleCx};
use crate::lex::Word;

// Not `-D`/`--devices`: `-D read` with `-r` reads the device nodes it
// meets, which `grep -r` skips by default.
const GREP: Spec = Spec::new(
    "EFGPiywxzsvVbnHhoqaIrRLlcTZU",
    "efmdABC",
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case \
     no-ignore-case word-regexp line-regexp null-data no-messages invert-match version help \
     max-count= byte-offset line-number no-line-number line-buffered with-filename no-filename \
     label= only-matching quiet silent binary-files= text directories= recursive \
     dereference-recursive include= exclude= exclude-from= exclude-dir= files-without-match \
     files-with-matches count initial-tab null before-context= after-context= context= \
     group-separator= no-group-separator color[=] colour[=] binary",
)
.numeric()
.pattern_first();

const SUMS: Spec = Spec::new(
    "btzw",
    "",
    "binary tag text zero ignore-missing quiet status strict warn help version",
);

/// The table: name and spec. `--help` and `--version` are everywhere.
pub(crate) const SPECS: &[(&str, Spec)] = &[
    (
        "ls",
        Spec::new(
            "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1",
            "ITw",
            "all almost-all author escape block-size= ignore-backups color[=] directory dired \
             classify[=] file-type format= full-time group-directories-first no-group \
             human-readable si dereference-command-line dereference-command-line-symlink-to-dir \
             hide= hyperlink[=] indicator-style= inode ignore= kibibytes dereference \
             numeric-uid-gid literal hide-control-chars show-control-chars quote-name \
             quoting-style= reverse recursive size sort= time= time-style= tabsize= width= \
             context zero help version",
        )
        .paths(Paths::Named),
    ),
    (
        "cat",
        Spec::new(
            "AbeEnstTuv",
            "",
            "show-all number-nonblank show-ends number squeeze-blank show-tabs \
             show-nonprinting help version",
        ),
    ),
    (
        "head",
        Spec::new(
            "qvz",
            "cn",
            "bytes= lines= quiet silent verbose zero-terminated help version",
        )
        .numeric(),
    ),
    (
        "tail",
        Spec::new(
            "fFqvz",
            "cns",
            "bytes= follow[=] lines= max-unchanged-stats= pid= quiet silent retry \
             sleep-interval= verbose zero-terminated help version",
        )
        .numeric(),
    ),
    (
        "wc",
        Spec::new(
            "cmlLw",
            "",
            "bytes chars lines max-line-length words total= help version",
        ),
    ),
    ("grep", GREP),
    ("egrep", GREP),
    ("fgrep", GREP),
    (
        "cut",
        Spec::new(
            "nszM",
            "bcdf",
            "bytes= characters= delimiter= fields= complement only-delimited \
             output-delimiter= zero-terminated help version",
        ),
    ),
    (
        "tr",
        Spec::new(
            "cCdst",
            "",
            "complement delete squeeze-repeats truncate-set1 help version",
        )
        .paths(Paths::Text),
    ),
    (
        "diff",
        Spec::new(
            "qsceunyptTlrNiEZbwBadv",
            "CUWFxXSID",
            "normal brief report-identical-files context[=] unified[=] ed rcs side-by-side \
             width= left-column suppress-common-lines show-c-function show-function-line= \
             label= expand-tabs initial-tab tabsize= suppress-blank-empty paginate recursive \
             no-dereference new-file unidirectional-new-file ignore-file-name-case \
             no-ignore-file-name-case exclude= exclude-from= starting-file= from-file= \
             to-file= ignore-case ignore-tab-expansion ignore-trailing-space \
             ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= \
             text strip-trailing-cr ifdef= old-group-format= new-group-format= \
             unchanged-group-format= changed-group-format= line-format= old-line-format= \
             new-line-format= unchanged-line-format= minimal horizon-lines= \
             speed-large-files color[=] palette= help version",
        ),
    ),
    (
        "cmp",
        Spec::new(
            "blsv",
            "in",
            "print-bytes ignore-initial= verbose bytes= quiet silent help version",
        ),
    ),
    (
        "comm",
        Spec::new(
            "123z",
            "",
            "check-order nocheck-order output-delimiter= total zero-terminated help version",
        ),
    ),
    ("which", Spec::new("as", "", "").paths(Paths::Text)),
    (
        "basename",
        Spec::new("az", "s", "multiple suffix= zero help version").paths(Paths::Text),
    ),
    (
        "dirname",
        Spec::new("z", "", "zero help version").paths(Paths::Text),
    ),
    (
        "realpath",
        Spec::new(
            "emLPqsz",
            "",
            "canonicalize-existing canonicalize-missing logical physical quiet relative-to= \
             relative-base= strip no-symlinks zero help version",
        )
        .paths(Paths::Named),
    ),
    (
        "readlink",
        Spec::new(
            "femnqsvz",
            "",
            "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent \
             verbose zero help version",
        )
        .paths(Paths::Named),
    ),
    ("sha1sum", SUMS),
    ("sha224sum", SUMS),
    ("sha256sum", SUMS),
    ("sha384sum", SUMS),
    ("sha512sum", SUMS),
    ("md5sum", SUMS),
    (
        "b2sum",
        Spec::new(
            "btzw",
            "l",
            "binary length= tag text zero ignore-missing quiet status strict warn help version",
        ),
    ),
    (
        "cksum",
        Spec::new(
            "wz",
            "al",
            "algorithm= length= tag untagged zero base64 raw debug warn quiet status strict \
             ignore-missing help version",
        ),
    ),
    (
        "jq",
        Spec::new(
            "cnesrRCMSajhV",
            "fL",
            "compact-output null-input exit-status slurp raw-output raw-output0 join-output \
             ascii-output raw-input color-output monochrome-output sort-keys tab indent= \
             unbuffered stream stream-errors seq from-file= arg== argjson== slurpfile== \
             rawfile== args jsonargs library-path= help version build-configuration",
        )
        .pattern_first(),
    ),
    (
        "free",
        Spec::new(
            "bkmghltvwV",
            "sc",
            "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human si lohi total \
             committed seconds= count= wide help version",
        )
        .paths(Paths::Text),
    ),
    (
        "uptime",
        Spec::new("phsV", "", "pretty help since version").paths(Paths::Text),
    ),
    (
        "seq",
        Spec::new("w", "fs", "format= separator= equal-width help version")
            .numeric()
            .paths(Paths::Text),
    ),
    (
        "nl",
        Spec::new(
            "p",
            "bdfhilnsvw",
            "body-numbering= section-delimiter= footer-numbering= header-numbering= \
             line-increment= join-blank-lines= number-format= no-renumber number-separator= \
             starting-line-number= number-width= help version",
        ),
    ),
    (
        "column",
        Spec::new(
            "tedLJxhV",
            "nONlEHRTWripcos",
            "table table-name= table-order= table-columns= table-columns-limit= \
             table-noextreme= table-noheadings table-header-repeat table-hide= table-right= \
             table-truncate= table-wrap= keep-empty-lines json tree= tree-id= tree-parent= \
             output-width= output-separator= separator= fillrows help version",
        ),
    ),
    (
        "fold",
        Spec::new("bs", "w", "bytes spaces width= help version").numeric(),
    ),
    (
        "expand",
        Spec::new("i", "t", "initial tabs= help version").numeric(),
    ),
    (
        "unexpand",
        Spec::new("a", "t", "all first-only tabs= help version").numeric(),
    ),
    (
        "od",
        Spec::new(
            "abcdfilosxvBDeFHILOX",
            "AjNSt",
            "address-radix= endian= skip-bytes= read-bytes= strings[=] format= \
             output-duplicates width[=] traditional help version",
        )
        .attached("w"),
    ),
    (
        "hexdump",
        Spec::new(
            "bcCdoxvLhV",
            "efns",
            "one-byte-octal one-byte-char canonical two-bytes-decimal two-bytes-octal \
             two-bytes-hex color[=] format= format-file= length= skip= no-squeezing help \
             version",
        ),
    ),
    (
        // binutils: `@FILE` would read options from a file; such a word
        // is an operand here and the path check sees the file.
        "strings",
        Spec::new(
            "adfwohvV",
            "ntTesU",
            "all data print-file-name bytes= radix= target= encoding= include-all-whitespace \
             output-separator= unicode= help version",
        )
        .numeric(),
    ),
    (
        "tac",
        Spec::new("br", "s", "before regex separator= help version"),
    ),
    ("rev", Spec::new("0hV", "", "zero help version")),
    (
        "paste",
        Spec::new("sz", "d", "delimiters= serial zero-terminated help version"),
    ),
    (
        "join",
        Spec::new(
            "iz",
            "aejotv12",
            "ignore-case check-order nocheck-order header zero-terminated help version",
        ),
    ),
    (
        "fmt",
        Spec::new(
            "cstu",
            "pwg",
            "crown-margin prefix= split-only tagged-paragraph uniform-spacing width= goal= help \
             version",
        )
        .numeric(),
    ),
    (
        "printenv",
        Spec::new("0", "", "null help version").paths(Paths::Text),
    ),
    (
        "du",
        Spec::new(
            "0abcDHhkLlmPSsxv",
            "BdtX",
            "null all apparent-size block-size= bytes total dereference-args max-depth= \
             summarize human-readable inodes dereference count-links no-dereference \
             separate-dirs si threshold= time[=] time-style= exclude-from= exclude= \
             one-file-system help version",
        )
        .paths(Paths::Named),
    ),
    (
        "df",
        Spec::new(
            "ahHiklPTv",
            "Btx",
            "all block-size= human-readable si inodes local no-sync output[=] portability \
             sync total type= print-type exclude-type= help version",
        )
        .paths(Paths::Named),
    ),
    (
        "stat",
        Spec::new(
            "Lft",
            "c",
            "dereference file-system cached= format= printf= terse help version",
        )
        .paths(Paths::Named),
    ),
    (
        "uname",
        Spec::new(
            "asnrvmpio",
            "",
            "all kernel-name nodename kernel-release kernel-version machine processor \
             hardware-platform operating-system help version",
        )
        .paths(Paths::Text),
    ),
    (
        "id",
        Spec::new(
            "aZgGnruz",
            "",
            "context group groups name real user zero help version",
        )
        .paths(Paths::Text),
    ),
    (
        "whoami",
        Spec::new("", "", "help version").paths(Paths::Text),
    ),
    (
        "nproc",
        Spec::new("", "", "all ignore= help version").paths(Paths::Text),
    ),
    (
        "tty",
        Spec::new("s", "", "silent quiet help version").paths(Paths::Text),
    ),
    (
        "sleep",
        Spec::new("", "", "help version").paths(Paths::Text),
    ),
    (
        "base64",
        Spec::new("diz", "w", "decode ignore-garbage wrap= zero help version"),
    ),
    (
        "base32",
        Spec::new("diz", "w", "decode ignore-garbage wrap= zero help version"),
    ),
    (
        "basenc",
        Spec::new(
            "diz",
            "w",
            "base64 base64url base32 base32hex base16 base2msbf base2lsbf z85 decode \
             ignore-garbage wrap= zero help version",
        ),
    ),
    ("sum", Spec::new("rs", "", "sysv help version")),
    (
        "numfmt",
        Spec::new(
            "z",
            "d",
            "debug delimiter= field= format= from= from-unit= grouping header[=] invalid= \
             padding= round= suffix= to= to-unit= unit-separator= zero-terminated help version",
        ),
    ),
    ("expr", Spec::new("", "", "help version").paths(Paths::Text)),
    (
        "factor",
        Spec::new("", "", "exponents help version").paths(Paths::Text),
    ),
    (
        "groups",
        Spec::new("", "", "help version").paths(Paths::Text),
    ),
    (
        "logname",
        Spec::new("", "", "help version").paths(Paths::Text),
    ),
    ("arch", Spec::new("", "", "help version").paths(Paths::Text)),
];

/// `ps` reads its options three ways (`-ef`, `aux`, `--sort`) and has none
/// that writes or runs; words of option and format characters are fine.
fn ps<'w>(args: &[Word]) -> Rule<'w> {
    let ok = |w: &Word| {
        !w.dynamic
            && w.lit
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-,=:+%_".contains(c))
    };
    match args.iter().find(|w| !ok(w)) {
        Some(w) => Rule::medium(format!(
            "`ps {}` is not an option known to be harmless",
            w.lit
        )),
        None => Rule::low("`ps` only lists processes").paths(Paths::Text),
    }
}

pub(super) fn rule<'w>(name: &str, args: &'w [Word], cx: &RuleCx) -> Option<Rule<'w>> {
    if name == "ps" {
        return Some(ps(args));
    }
    let spec = SPECS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)?;
    let p = parse(&spec, args, cx.env);
    let mut r = match p.problem(name) {
        None => Rule::low(format!("`{name}` only reads")),
        Some(problem) => Rule::medium(problem),
    };
    r.paths = spec.paths;
    let given = p.has("e") || p.has("f") || p.has("regexp") || p.has("file") || p.has("from-file");
    if spec.pattern_first && !given {
        r.not_path = p.operands.first().copied();
    }
    // `grep -r` reads every file below its operands (`.` without one).
    let recurse = args
        .iter()
        .any(|w| matches!(w.lit.as_str(), "recurse" | "--directories=recurse"));
    if matches!(name, "grep" | "egrep" | "fgrep")
        && (p.has("r")
            || p.has("R")
            || p.has("recursive")
            || p.has("dereference-recursive")
            || recurse)
    {
        r.recursive = true;
    }
    Some(r)
}
