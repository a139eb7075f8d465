/* featurize — compute log-mel features of audio files into a featcache store (docs/featurize.md).
 * A thin main over fc_featurize_run: options → config, inputs → items, events → messages. */
#include "cmd/cli.h"
#include "cmd/featurize/config.h"
#include "cmd/featurize/inputs.h"
#include "cmd/featurize/report.h"

#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "featcache/fc_shard.h"

#include <malloc.h>
#include <sched.h>
#include <sys/stat.h>

enum {
  OPT_PRESET = 256,
  OPT_SR,
  OPT_NFFT,
  OPT_WIN,
  OPT_HOP,
  OPT_NMELS,
  OPT_FMIN,
  OPT_FMAX,
  OPT_MELSCALE,
  OPT_NORM,
  OPT_CENTER,
  OPT_PAD,
  OPT_PADMODE,
  OPT_SNIP_EDGES,
  OPT_POWER,
  OPT_LOG,
  OPT_TOP_DB,
  OPT_DTYPE,
  OPT_CODEC,
  OPT_MANIFEST,
  OPT_MANIFEST_FORMAT,
  OPT_AUDIO_DIR,
  OPT_MAX_SECONDS,
  OPT_REHASH,
  OPT_STRICT,
  OPT_PROGRESS,
  OPT_JSON,
  OPT_DEVICE,
  OPT_GPU_MIN_SECONDS,
  OPT_SHARD,
  OPT_WRITERS,
  OPT_PRINT_CONFIG,
  OPT_BATCH,
  OPT_MAX_FAILED,
  OPT_FORCE_NEW_STORE,
  OPT_CHECK_PAGES,
  OPT_VERSION
};

static const fc_cli_opt options[] =
    {{NULL, 0, 0, NULL, "Output:"},
     {"output", 'o', required_argument, "STORE", "store directory (created if missing)"},
     {"writers", OPT_WRITERS, required_argument, "N",
      "a new STORE split into N parts, one writer each (default: 1 for a small job, else by the "
      "device and -j)"},
     {"batch", OPT_BATCH, required_argument, "N",
      "records per write transaction (default 64; one is also committed after 1 s)"},
     {"force-new-store", OPT_FORCE_NEW_STORE, no_argument, NULL,
      "create STORE even in a non-empty directory that is not a store"},
     {"check-pages", OPT_CHECK_PAGES, no_argument, NULL,
      "check every page of an existing STORE first (cache-verify's first step; without it, "
      "its free list alone): a damaged one is refused, nothing written"},
     {NULL, 0, 0, NULL, "Features:"},
     {"preset", OPT_PRESET, required_argument, "NAME",
      "hifigan (default), tacotron2, librosa, whisper, kaldi"},
     {"sr", OPT_SR, required_argument, "HZ", "sample rate; audio is resampled to it"},
     {"n-fft", OPT_NFFT, required_argument, "N", "FFT size"},
     {"win", OPT_WIN, required_argument, "N", "window length (<= n-fft)"},
     {"hop", OPT_HOP, required_argument, "N", "hop length"},
     {"n-mels", OPT_NMELS, required_argument, "N", "mel bands"},
     {"fmin", OPT_FMIN, required_argument, "HZ", "lowest mel frequency"},
     {"fmax", OPT_FMAX, required_argument, "HZ",
      "highest mel frequency (0: sr/2; negative: that far below sr/2, as Kaldi's --high-freq)"},
     {"mel-scale", OPT_MELSCALE, required_argument, "S", "slaney, htk or kaldi"},
     {"norm", OPT_NORM, required_argument, "N", "slaney or none"},
     {"center", OPT_CENTER, required_argument, "BOOL", "centre frames (pad n-fft/2 each side)"},
     {"pad", OPT_PAD, required_argument, "N", "samples padded each side when not centred"},
     {"pad-mode", OPT_PADMODE, required_argument, "M", "reflect or constant"},
     {"snip-edges", OPT_SNIP_EDGES, required_argument, "BOOL",
      "Kaldi's --snip-edges: true (default), only whole windows; false, (N + hop/2) / hop frames, "
      "edges mirrored"},
     {"power", OPT_POWER, required_argument, "P", "1 magnitude, 2 power"},
     {"log", OPT_LOG, required_argument, "L", "none, ln, log10, db or whisper"},
     {"top-db", OPT_TOP_DB, required_argument, "DB",
      "with --log db: clamp to the utterance's max - DB (default 80; 0: none, top_db=None)"},
     {"dtype", OPT_DTYPE, required_argument, "T", "f32 (default), f16, bf16 or mq (the codec)"},
     {"codec", OPT_CODEC, required_argument, "C",
      "none (default) or mq: log-mel coded ~4x smaller than f32, max error 2^-8 (ln)"},
     {"print-config", OPT_PRINT_CONFIG, required_argument, "PRESET",
      "print the config JSON a store would hold for PRESET and the options above, and exit"},
     {NULL, 0, 0, NULL, "Inputs:"},
     {"manifest", OPT_MANIFEST, required_argument, "FILE",
      "LJSpeech csv, Kaldi wav.scp, JSON lines or a path list"},
     {"manifest-format", OPT_MANIFEST_FORMAT, required_argument, "F",
      "auto, ljspeech, kaldi, jsonl or list"},
     {"audio-dir", OPT_AUDIO_DIR, required_argument, "DIR", "base of relative manifest paths"},
     {"max-seconds", OPT_MAX_SECONDS, required_argument, "S",
      "fail inputs longer than S seconds (default 0: no limit)"},
     {"shard", OPT_SHARD, required_argument, "K/N",
      "only shard K of N (0-based, by a hash of the id); 'slurm/N': K is the Slurm "
      "array task id; 'slurm': N is the task count too (--array=0-N-1)"},
     {NULL, 0, 0, NULL, "Running:"},
     {"jobs", 'j', required_argument, "N", "worker threads (default: the CPUs nproc counts)"},
     {"device", OPT_DEVICE, required_argument, "DEV", "auto (default), cpu, cuda or cuda:N"},
     {"gpu-min-seconds", OPT_GPU_MIN_SECONDS, required_argument, "S",
      "auto: use the GPU for jobs of at least S s of audio (default 3000 x jobs; 0: any job)"},
     {"rehash", OPT_REHASH, no_argument, NULL,
      "read and hash every input (default: one stored with its path, size, mtime is not read)"},
     {"strict", OPT_STRICT, no_argument, NULL, "stop at the first bad input"},
     {"max-failed", OPT_MAX_FAILED, required_argument, "N|P%",
      "exit 0 when at most N (or P % of the) inputs failed (default 0)"},
     {"quiet", 'q', no_argument, NULL, "no progress, no summary unless something failed"},
     {"verbose", 'v', no_argument, NULL, "one line per input, the device, where the time went"},
     {"progress", OPT_PROGRESS, no_argument, NULL, "progress line even when stderr is no terminal"},
     {"json", OPT_JSON, no_argument, NULL, "print a JSON summary on stdout"},
     {"help", 'h', no_argument, NULL, "show this help and exit"},
     {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
     {NULL, 0, 0, NULL, NULL}};

static const char synopsis[] =
    "featurize [options] -o STORE [AUDIO...]\n"
    "       featurize [options] -o STORE --manifest FILE\n"
    "       find DIR -name '*.wav' | featurize [options] -o STORE -\n"
    "       featurize --print-config PRESET [feature options]";
static const char description[] =
    "Compute log-mel spectrograms of audio files into a featcache store. Inputs already stored\n"
    "with the same content and config are skipped (a file whose path, size and mtime the store\n"
    "holds is not even read); bad inputs are reported and skipped.";
static const char footer[] =
    "Each input that fails is recorded in the store (cache-verify --manifest lists it apart).\n"
    "Exit status: 0 all stored (or the failed ones within --max-failed), 1 some inputs failed,\n"
    "2 usage or configuration error, or a store this user may only read that lacks inputs (it is\n"
    "checked, nothing written), 130/143 interrupted (finished work is committed).\n"
    "Manual: man featurize; the presets' parameters: man featcache-presets.";

/* No store at dir yet (no data.mdb, no split-store marker): featurize's default writers apply. */
static int store_is_new(const char *dir) {
  unsigned n = 0;
  char p[4096];
  struct stat st;
  if (fc_store_split_count(dir, &n) != 0 || n > 0) return 0;
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  return stat(p, &st) != 0;
}

int main(int argc, char **argv) {
  fc_cli_tool = "featurize";
  fc_cli_std_fds();
  /* Freed memory stays with the process (glibc): a job allocates and frees the same sizes over and
   * over (files, records, the writers' LMDB pages), which glibc would otherwise unmap or trim and
   * the kernel fault in again, zeroed. The peak is unchanged (docs/featurize.md "Memory"). */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  enum { NOPT = sizeof options / sizeof options[0] };
  struct option longs[NOPT + 1];
  char shorts[3 * NOPT + 3];
  shorts[0] = ':'; /* ':' for a missing value, '?' for an unknown option */
  fc_cli_getopt_tables(options, longs, shorts + 1);

  fzc_overrides ov;
  memset(&ov, 0, sizeof ov);
  const char *store_dir = NULL, *manifest = NULL, *audio_dir = NULL, *device_spec = "auto";
  const char *shard_spec = NULL, *print_config = NULL, *opt_hint;
  int manifest_format = FC_MANIFEST_AUTO, strict = 0, quiet = 0, verbose = 0, progress = 0,
      json = 0, rehash = 0, force_new_store = 0, check_pages = 0;
  fc_cli_max_failed max_failed;
  memset(&max_failed, 0, sizeof max_failed);
  double max_seconds = 0, gpu_min_seconds = 0;
  cpu_set_t cpus; /* -j's default: the CPUs it may run on (taskset, a Slurm or container cpuset) */
  long ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus)
                                                            : sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t jobs = ncpu > 0 ? (uint32_t)(ncpu < 256 ? ncpu : 256) : 1;
  uint32_t writers = 0; /* 0: the store's own layout, or the default for a new store */
  uint32_t batch = 0; /* records per write transaction; 0: the library's default */

  static const char *const scale_names[] = {"slaney", "htk", "kaldi", NULL};
  static const int scale_values[] = {FC_MEL_SLANEY, FC_MEL_HTK, FC_MEL_KALDI};
  static const char *const norm_names[] = {"slaney", "none", NULL};
  static const int norm_values[] = {FC_NORM_SLANEY, FC_NORM_NONE};
  static const char *const padmode_names[] = {"reflect", "constant", NULL};
  static const int padmode_values[] = {FC_PAD_REFLECT, FC_PAD_CONSTANT};
  static const char *const log_names[] = {"none", "ln", "log10", "db", "whisper", NULL};
  static const int log_values[] = {FC_LOG_NONE, FC_LOG_LN, FC_LOG_LOG10, FC_LOG_DB, FC_LOG_WHISPER};
  static const char *const dtype_names[] = {"f32", "f16", "bf16", "mq", NULL};
  static const int dtype_values[] = {FC_DTYPE_F32, FC_DTYPE_F16, FC_DTYPE_BF16, FC_DTYPE_MQ};
  static const char *const codec_names[] = {"none", "mq", NULL};
  static const int codec_values[] = {0, FC_DTYPE_MQ};
  int codec = -1;
  static const char *const mf_names[] = {"auto", "ljspeech", "kaldi", "jsonl", "list", NULL};
  static const int mf_values[] = {FC_MANIFEST_AUTO, FC_MANIFEST_LJSPEECH, FC_MANIFEST_KALDI,
                                  FC_MANIFEST_JSONL, FC_MANIFEST_LIST};

  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case 'o': store_dir = optarg; break;
    case OPT_PRESET: ov.preset = optarg; break;
    case OPT_SR:
      ov.set |= FC_MEL_F_SAMPLE_RATE;
      ov.v.sample_rate = fc_cli_u32("sr", optarg, 1, FC_MEL_MAX_SAMPLE_RATE);
      break;
    case OPT_NFFT:
      ov.set |= FC_MEL_F_N_FFT;
      ov.v.n_fft = fc_cli_u32("n-fft", optarg, 2, FC_MEL_MAX_N_FFT);
      break;
    case OPT_WIN:
      ov.set |= FC_MEL_F_WIN_LENGTH;
      ov.v.win_length = fc_cli_u32("win", optarg, 1, FC_MEL_MAX_N_FFT);
      break;
    case OPT_HOP:
      ov.set |= FC_MEL_F_HOP_LENGTH;
      ov.v.hop_length = fc_cli_u32("hop", optarg, 1, FC_MEL_MAX_N_FFT);
      break;
    case OPT_NMELS:
      ov.set |= FC_MEL_F_N_MELS;
      ov.v.n_mels = fc_cli_u32("n-mels", optarg, 1, FC_MEL_MAX_N_MELS);
      break;
    case OPT_FMIN:
      ov.set |= FC_MEL_F_FMIN;
      ov.v.fmin = fc_cli_double("fmin", optarg, 0, 1e7);
      break;
    case OPT_FMAX:
      ov.set |= FC_MEL_F_FMAX;
      ov.v.fmax = fc_cli_double("fmax", optarg, -1e7, 1e7);
      break;
    case OPT_MELSCALE:
      ov.set |= FC_MEL_F_MEL_SCALE;
      ov.v.mel_scale = (fc_mel_scale)fzc_pick("mel-scale", optarg, scale_names, scale_values);
      break;
    case OPT_NORM:
      ov.set |= FC_MEL_F_NORM;
      ov.v.norm = (fc_mel_norm)fzc_pick("norm", optarg, norm_names, norm_values);
      break;
    case OPT_CENTER:
      ov.set |= FC_MEL_F_CENTER;
      ov.v.center = fc_cli_bool("center", optarg);
      break;
    case OPT_PAD:
      ov.set |= FC_MEL_F_PAD;
      ov.v.pad = fc_cli_u32("pad", optarg, 0, FC_MEL_MAX_N_FFT);
      break;
    case OPT_SNIP_EDGES:
      ov.set |= FC_MEL_F_SNIP_EDGES;
      ov.v.no_snip_edges = !fc_cli_bool("snip-edges", optarg);
      break;
    case OPT_PADMODE:
      ov.set |= FC_MEL_F_PAD_MODE;
      ov.v.pad_mode = (fc_pad_mode)fzc_pick("pad-mode", optarg, padmode_names, padmode_values);
      break;
    case OPT_POWER:
      ov.set |= FC_MEL_F_POWER;
      /* 1 or 2: a number in a range would say 1.5 is one */
      ov.v.power = optarg[strspn(optarg, "0123456789+-.eE")] ? 0 : strtod(optarg, NULL);
      if (ov.v.power != 1 && ov.v.power != 2)
        fc_cli_usage_error("invalid value '%s' for --power (want 1 or 2)", optarg);
      break;
    case OPT_LOG:
      ov.set |= FC_MEL_F_LOG;
      ov.v.log = (fc_log)fzc_pick("log", optarg, log_names, log_values);
      break;
    case OPT_TOP_DB:
      ov.set |= FC_MEL_F_TOP_DB;
      ov.v.top_db = fc_cli_double("top-db", optarg, 0, 1e4);
      break;
    case OPT_DTYPE:
      ov.set |= FC_MEL_F_DTYPE;
      ov.v.dtype = (fc_dtype)fzc_pick("dtype", optarg, dtype_names, dtype_values);
      break;
    case OPT_CODEC: codec = fzc_pick("codec", optarg, codec_names, codec_values); break;
    case OPT_MANIFEST: manifest = fc_cli_manifest_arg(manifest, optarg); break;
    case OPT_MANIFEST_FORMAT:
      manifest_format = fzc_pick("manifest-format", optarg, mf_names, mf_values);
      break;
    case OPT_AUDIO_DIR: audio_dir = fc_cli_path("audio-dir", optarg); break;
    case OPT_MAX_SECONDS: max_seconds = fc_cli_double("max-seconds", optarg, 0, 1e9); break;
    case 'j': jobs = fc_cli_u32_short(c, "jobs", optarg, 1, 256, longs); break;
    case OPT_WRITERS: writers = fc_cli_u32("writers", optarg, 1, FC_SPLIT_MAX_PARTS); break;
    case OPT_BATCH: batch = fc_cli_u32("batch", optarg, 1, 1u << 20); break;
    case OPT_DEVICE: device_spec = optarg; break;
    case OPT_GPU_MIN_SECONDS:
      gpu_min_seconds = fc_cli_double("gpu-min-seconds", optarg, 0, 1e12);
      if (gpu_min_seconds == 0) gpu_min_seconds = -1; /* the library's "any job" */
      break;
    case OPT_SHARD: shard_spec = optarg; break;
    case OPT_PRINT_CONFIG: print_config = optarg; break;
    case OPT_STRICT: strict = 1; break;
    case OPT_REHASH: rehash = 1; break;
    case OPT_MAX_FAILED: max_failed = fc_cli_parse_max_failed("max-failed", optarg); break;
    case OPT_FORCE_NEW_STORE: force_new_store = 1; break;
    case OPT_CHECK_PAGES: check_pages = 1; break;
    case 'q': quiet = 1; break;
    case 'v': verbose = 1; break;
    case OPT_PROGRESS: progress = 1; break;
    case OPT_JSON: json = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: /* a reference's spelling (--hop-length, --n_mels) is told featurize's option */
      if (!optopt && optind > 0 && (opt_hint = fzc_option_hint(argv[optind - 1])) != NULL)
        fc_cli_usage_error("unknown option '%s': %s", argv[optind - 1], opt_hint);
      fc_cli_bad_option(argc, argv, longs);
    }
  }
  fc_cli_out_store(store_dir);
  if (print_config) {
    if (ov.preset && strcmp(ov.preset, print_config) != 0)
      fc_cli_usage_error("--print-config %s and --preset %s disagree", print_config, ov.preset);
    if (store_dir || manifest || optind < argc)
      fc_cli_usage_error("--print-config prints a config and exits: give no store and no inputs");
    ov.preset = print_config;
  } else if (!store_dir) {
    fc_cli_usage_error("no store given (-o STORE)");
  }
  if (strict && max_failed.text[0])
    fc_cli_usage_error("--strict stops at the first failure: drop --max-failed %s",
                       max_failed.text);
  if (codec == FC_DTYPE_MQ) {
    if ((ov.set & FC_MEL_F_DTYPE) && ov.v.dtype != FC_DTYPE_MQ)
      fc_cli_usage_error("--codec mq stores its own dtype: drop --dtype %s",
                         fc_dtype_name(ov.v.dtype));
    ov.set |= FC_MEL_F_DTYPE;
    ov.v.dtype = FC_DTYPE_MQ;
  } else if (codec == 0 && (ov.set & FC_MEL_F_DTYPE) && ov.v.dtype == FC_DTYPE_MQ) {
    fc_cli_usage_error("--codec none and --dtype mq disagree");
  }
  int nargs = argc - optind;
  int from_stdin = !manifest && (nargs == 0 || (nargs == 1 && strcmp(argv[optind], "-") == 0));
  if (manifest && nargs > 0) fc_cli_usage_error("give either --manifest or paths, not both");
  if (!manifest && nargs == 0 && !print_config && isatty(STDIN_FILENO)) /* not a silent wait */
    fc_cli_usage_error(
        "no input: give AUDIO..., --manifest FILE, or '-' for paths on stdin (stdin "
        "is a terminal)");
  if (!from_stdin)
    for (int i = optind; i < argc; i++)
      if (strcmp(argv[i], "-") == 0) fc_cli_usage_error("'-' (stdin) cannot be mixed with paths");
  if (audio_dir && !manifest) fc_cli_usage_error("--audio-dir applies to --manifest only");
  if (audio_dir) { /* one that is no directory fails every input: a configuration error */
    struct stat ast;
    const int e = stat(audio_dir, &ast) != 0 ? errno : S_ISDIR(ast.st_mode) ? 0 : ENOTDIR;
    if (e) {
      fc_cli_warn(audio_dir, "--audio-dir: %s", strerror(e));
      return FC_EXIT_USAGE;
    }
  }
  if (manifest_format != FC_MANIFEST_AUTO && !manifest)
    fc_cli_usage_error("--manifest-format applies to --manifest only");

  char why[512]; /* a bad --shard or --device is one with --print-config too */
  uint32_t shard_k = 0, shard_n = 1;
  if (shard_spec && fc_shard_parse(shard_spec, &shard_k, &shard_n, why, sizeof why) != 0)
    fc_cli_usage_error("%s", why);
  fc_featurize_opts fo;
  fc_featurize_opts_init(&fo);
  if (fc_device_parse(device_spec, &fo.device, why, sizeof why) != 0) fc_cli_usage_error("%s", why);
  fc_mel_config cfg;
  fzc_build_config(&ov, &cfg);
  if (fo.device.kind == FC_DEVICE_CUDA && cfg.dtype == FC_DTYPE_MQ) /* it would open the GPU idle */
    fc_cli_usage_error(
        "--device %s: the GPU does not make mq records (--dtype mq is coded per "
        "utterance on the CPU): give --device cpu, or auto",
        device_spec);
  if (print_config) { /* the bytes meta's cfg/<digest> holds for this config, then a newline */
    char cfg_json[1024];
    int n = fc_mel_config_json(&cfg, cfg_json, sizeof cfg_json);
    if (n < 0) {
      fc_cli_warn(NULL, "cannot write the config: %s", fc_strerror(n));
      return FC_EXIT_USAGE;
    }
    fwrite(cfg_json, 1, (size_t)n, stdout);
    fputc('\n', stdout);
    return fc_cli_stdout_status(FC_EXIT_OK);
  }

  fc_device resolved;
  /* An explicit device is checked before the inputs are read (one the driver lists is taken
   * without starting the CUDA runtime: the job starts it); auto is chosen by the job's size. */
  if (fo.device.kind != FC_DEVICE_AUTO &&
      fc_featurize_choose_device(&fo.device, NULL, 0, jobs, gpu_min_seconds, &resolved, why,
                                 sizeof why)) {
    fc_cli_warn(NULL, "%s", why);
    return FC_EXIT_USAGE;
  }

  /* Inputs. A manifest file is read as the job goes (memory: the items in flight and the ids
   * seen, for the duplicate check); the device (auto) and the writers (a new store without
   * --writers) are chosen from its first items. When neither is to be chosen, only its first item
   * is read here: the manifest opens and parses before the store is touched, as always. */
  fc_item_list items = {0};
  int stream = 0; /* a manifest file, read as the job goes */
  int nul_first = 0; /* the manifest's first line holds a NUL byte */
  fc_manifest_opts mo = {.format = (fc_manifest_format)manifest_format, .audio_dir = audio_dir};
  int rc;
  const char *mname = manifest && strcmp(manifest, "-") == 0 ? "(stdin)" : manifest; /* said */
  /* a pipe (<(grep ...), /dev/stdin, a FIFO) gives its lines once: read whole (a device or a
   * socket too, which the reader refuses: "not a regular file or a pipe (a device)") */
  struct stat mst;
  const int pipe_manifest =
      manifest && stat(manifest, &mst) == 0 && !S_ISREG(mst.st_mode) && !S_ISDIR(mst.st_mode);
  if (manifest && strcmp(manifest, "-") != 0 && !pipe_manifest) {
    stream = 1;
    if (shard_spec) mo.shard_k = shard_k, mo.shard_n = shard_n;
    const int choose =
        fo.device.kind == FC_DEVICE_AUTO || (writers == 0 && store_is_new(store_dir));
    rc = fzc_first_items(manifest, &mo, choose ? 65536 : 1, &items, why, sizeof why);
    if (rc) {
      char hint[8400]; /* a folder: its manifest inside, or a folder of audio */
      fc_cli_warn(manifest, "%s%s", why[0] ? why : fc_strerror(rc),
                  fzc_manifest_dir_hint(manifest, rc, hint, sizeof hint));
      return FC_EXIT_USAGE;
    }
    nul_first = fzc_first_line_has_nul(&items);
    if (shard_spec) { /* the shard's first item need not be the file's: its first line alone */
      fc_manifest_opts whole = mo;
      whole.shard_k = whole.shard_n = 0;
      fc_item_list first;
      if (fzc_first_items(manifest, &whole, 1, &first, why, sizeof why) == 0) {
        nul_first = fzc_first_line_has_nul(&first);
        fc_item_list_free(&first);
      }
    }
  } else if (manifest) {
    fzc_check_piped_segments(manifest, mname, manifest_format); /* NeMo's offset, in a pipe */
    rc = fc_manifest_read(manifest, &mo, &items, why, sizeof why);
    if (rc) {
      fc_cli_warn(mname, "%s", why[0] ? why : fc_strerror(rc));
      return FC_EXIT_USAGE;
    }
    nul_first = fzc_first_line_has_nul(&items);
  } else if (from_stdin) {
    rc = fc_items_from_stream(stdin, &items);
    if (rc == FC_ETOOLONG) /* an endless stream without newlines: stopped at the limit */
      fc_cli_usage_error(
          "stdin is not a list of paths: a line of it has no line break in its "
          "first %zu MiB (the most a line may have); nothing done",
          FC_MANIFEST_LINE_MAX >> 20);
    if (rc) {
      fc_cli_warn("-", "cannot read paths: %s", fc_strerror(rc));
      return FC_EXIT_USAGE;
    }
    /* a first line with a NUL: no path list at all, but find -print0's names or an audio file's
     * bytes (featurize -o S - < a.wav), whose every line would fail */
    if (fzc_first_line_has_nul(&items) && items.items[0].line == 1) {
      fc_item_list_free(&items);
      fc_cli_usage_error(
          "stdin is not a list of paths: its first line holds a NUL byte (from find "
          "-print0? use -print; an audio file? give its path as AUDIO)");
    }
    fzc_check_stdin_list(&items); /* cat wav.scp | featurize -o S - */
  } else {
    rc = fc_items_from_paths((const char *const *)(argv + optind), (size_t)nargs, &items);
    if (rc) {
      fc_cli_warn(NULL, "%s", fc_strerror(rc));
      return FC_EXIT_USAGE;
    }
  }

  if (nul_first) { /* an audio file (or UTF-16 text) as the manifest: each line would fail */
    fc_item_list_free(&items);
    fzc_refuse_nul_manifest(manifest, stream);
  }

  if (manifest) fc_cli_refuse_json_document(manifest, items.format); /* json.dump of a list */
  if ((manifest || from_stdin) && !stream && manifest_format == FC_MANIFEST_AUTO) /* ...piped */
    fc_cli_refuse_json_stream(manifest ? manifest : "-", mname ? mname : "(stdin)", &items,
                              items.format);

  /* tokenize's id<TAB>text: every line would fail for want of a path (a wav.scp with tabs is
   * detected as Kaldi when its first line names an audio file) */
  if (manifest && items.format == FC_MANIFEST_TSV && items.count) {
    fc_item_list_free(&items);
    fc_cli_warn(mname,
                "id<TAB>text lines name no audio (a transcript, tokenize's manifest); for "
                "id<TAB>path lines give --manifest-format kaldi");
    return FC_EXIT_USAGE;
  }

  if (manifest) fzc_check_jsonl_transcript(mname, &items); /* tokenize's JSON lines */
  if (manifest && manifest_format == FC_MANIFEST_AUTO)
    fzc_check_kaldi_text(manifest, audio_dir, &items);
  if (manifest) fzc_check_comma_csv(manifest, &items); /* an audiofolder's metadata.csv */
  if (manifest && !audio_dir) fzc_check_ljspeech_wavs(manifest, &items);
  if (stream || pipe_manifest) /* a Kaldi recipe's wav.scp, a path list in <(grep ...) */
    fzc_check_cwd_relative(manifest, &mo, &items);
  if (manifest) fzc_check_segments(manifest, &items); /* NeMo's offset and duration */
  if (manifest) fzc_warn_kaldi_segments(manifest, &items, quiet); /* a Kaldi folder's segments */
  fzc_ljspeech_audio_ext(manifest, &items, &mo, verbose); /* wavs/ of FLAC files */

  if (shard_spec && !stream) {
    size_t all = items.count;
    fc_item_list_shard(&items, shard_k, shard_n);
    if (verbose)
      fc_cli_warn(NULL, "shard %u/%u: %zu of %zu inputs", shard_k, shard_n, items.count, all);
  }

  if (fo.device.kind == FC_DEVICE_AUTO && cfg.dtype == FC_DTYPE_MQ) {
    /* coded per utterance, which the GPU's pipeline does not do: the CPU, without starting a GPU
     * only to leave it (docs/featurize.md "Choosing the device") */
    resolved = (fc_device){.kind = FC_DEVICE_CPU};
    snprintf(why, sizeof why, "--dtype mq: the GPU does not make mq records");
  } else if (fo.device.kind == FC_DEVICE_AUTO &&
             fc_featurize_choose_device(&fo.device, items.items, items.count, jobs, gpu_min_seconds,
                                        &resolved, why, sizeof why)) {
    fc_cli_warn(NULL, "%s", why);
    fc_item_list_free(&items);
    return FC_EXIT_USAGE;
  }
  char device_name[32];
  fc_device_name(&resolved, device_name, sizeof device_name);
  if (verbose) /* auto says which device it took, and why not the GPU when it fell back */
    fc_cli_warn(NULL, "device: %s%s%s%s", device_name, why[0] ? " (" : "", why, why[0] ? ")" : "");
  fo.fallback_to_cpu = fo.device.kind == FC_DEVICE_AUTO; /* a GPU that cannot start: the CPU */
  fo.auto_gpu_min_seconds = gpu_min_seconds; /* a large job starts the GPU beside the CPU */
  fo.device = resolved;

  fc_cli_check_new_store_dir(store_dir, force_new_store, "force-new-store");
  const int defaulted = writers == 0; /* no --writers: the store's own layout, or a new one's */
  if (defaulted && store_is_new(store_dir))
    writers =
        fc_featurize_default_writers(&resolved, items.items, items.count, jobs, gpu_min_seconds);
  fc_store **parts = NULL;
  unsigned n_parts = 0;
  /* before the open: a store cache-prune holds is waited for, and a signal then ends the wait */
  fc_cli_install_signals();
  const uint64_t total = stream ? 0 : items.count; /* a streamed manifest's: counted as it goes */
  if ((rc = fc_cli_check_pages_before_write(store_dir, check_pages)) != 0) {
    fc_item_list_free(&items);
    return fzc_end_unbegun(rc, json, total, &cfg, store_dir, &max_failed); /* said */
  }
  fc_cli_warn_network_fs(store_dir); /* whatever -q: a store it could corrupt silently */
  if (!quiet) fc_cli_note_prune_running(store_dir);
  /* no read-ahead: a run reads the store at its entries' leaves, here and there (with it, a
   * rerun read the disk's read-ahead around each leaf it looked at: most of a cold store's file) */
  const unsigned sflags = FC_STORE_CREATE | FC_STORE_NOMETASYNC | FC_STORE_NORDAHEAD;
  fc_cli_room_for_store(store_dir, writers); /* a low soft open-file limit raised first */
  rc = fc_store_open_split(store_dir, sflags, writers, &parts, &n_parts, why, sizeof why);
  if (rc == FC_ECONFIG && defaulted && writers > 1) {
    /* Another job (a tokenize or featurize beside this one in a `make -j`) made the store since
     * it was seen to be new: a plain store, or a split store of other parts. The writers were
     * this job's default, not the user's: take the layout found, as for a store there at start
     * (a refusal that is not about the layout, such as a part given for its split store, is
     * refused again). */
    if (verbose) fc_cli_warn(NULL, "%s (no --writers given: taking the store's layout)", why);
    rc = fc_store_open_split(store_dir, sflags, 0, &parts, &n_parts, why, sizeof why);
  }
  if (rc == FC_EINTR && fc_cli_signal) { /* while it waited for cache-prune: nothing done */
    fc_cli_warn(store_dir, "interrupted while waiting for cache-prune to finish: nothing done");
    fc_item_list_free(&items);
    return fzc_end_unbegun(fc_cli_signal_exit(), json, total, &cfg, store_dir, &max_failed);
  }
  /* A store this user may only read: checked instead, nothing written (docs/featurize.md "A store
   * you may only read"). */
  const int write_err = rc;
  const int ro = rc == EACCES || rc == EROFS || rc == EPERM; /* why: a split store's part */
  const int ro_rc = ro ? fc_cli_open_to_check(store_dir, &parts, &n_parts) : 0;
  const int check = ro && ro_rc == 0;
  if (check) {
    rc = 0;
    why[0] = '\0';
    if (!quiet)
      fc_cli_warn(store_dir,
                  "cannot write the store (%s): checking that it holds every input instead, "
                  "writing nothing",
                  fc_cli_write_refused(store_dir, write_err, why, sizeof why));
    why[0] = '\0';
  }
  if (rc) {
    if (why[0] && rc == EMFILE) /* past the hard limit, which no process raises itself */
      fc_cli_say_fd_limit(why, store_dir, writers);
    else if (why[0])
      fc_cli_warn(NULL, "%s", why);
    else if (rc == ENOENT && fzc_store_dangling_link(store_dir, why, sizeof why))
      fc_cli_warn(
          store_dir,
          "cannot create the store: a symbolic link to %s, which does not exist (mkdir -p it)",
          why);
    else if (rc == ENOENT && fzc_store_folder_missing(store_dir, why, sizeof why))
      fc_cli_warn(store_dir,
                  "cannot create the store: its folder %s does not exist (a new store is made in "
                  "an existing folder: mkdir -p it)",
                  why);
    else if (ro && (ro_rc == ENOENT || ro_rc == FC_ENOSTORE)) /* none to check: none made */
      fc_cli_warn(store_dir, "cannot create the store: %s", fc_strerror(rc));
    else
      fc_cli_warn(store_dir, "cannot open the store: %s", fc_strerror(rc));
    fc_item_list_free(&items);
    return FC_EXIT_USAGE;
  }
  if (!check &&
      (rc = fc_cli_mark_shard(parts[0], shard_k, shard_n)) != 0) { /* docs/FORMAT.md "Shards" */
    /* before anything is stored, as the open it belongs to: nothing done */
    fc_cli_warn(store_dir, "cannot record its shard in the store: %s", fc_strerror(rc));
    fc_store_close_split(parts, n_parts);
    fc_item_list_free(&items);
    return FC_EXIT_USAGE;
  }
  if (verbose && n_parts > 1)
    fc_cli_warn(store_dir, "a split store of %u parts: %u writers", n_parts, n_parts);

  fzc_report rctx = {.manifest = mname,
                     .stdin_list = from_stdin ? "(stdin)" : NULL,
                     .sample_rate = cfg.sample_rate,
                     .json = json,
                     .verbose = verbose,
                     .check = check,
                     .total = total};
  fc_cli_progress_init(&rctx.progress, progress, quiet);
  fo.jobs = jobs = fzc_jobs_for_fds(jobs, n_parts, quiet); /* ulimit -n */
  fo.batch_records = batch;
  fo.max_seconds = max_seconds;
  fo.rehash = rehash;
  fo.strict = strict;
  fo.stop = &fc_cli_signal;
  fo.on_event = fzc_on_event;
  fo.on_progress = fzc_on_progress;
  fo.user = &rctx;
  fo.parts = parts;
  fo.n_parts = n_parts;
  fo.check_only = check;
  if (stream) { /* the first items served their turn: the job reads the manifest on its own */
    fo.manifest = manifest;
    fo.manifest_opts = &mo;
    fc_item_list_free(&items);
    malloc_trim(0); /* their ~9 MB (65,536 of them) back to the system: M_TRIM_THRESHOLD keeps it */
  }
  fc_featurize_stats st;
  rc = fc_featurize_run(parts[0], &cfg, items.items, items.count, &fo, &st, why, sizeof why);
  fc_cli_progress_end(&rctx.progress);
  fc_store_close_split(parts, n_parts);
  fc_item_list_free(&items);
  if (st.fell_back_to_cpu) { /* auto's GPU could not be started (busy, out of memory) */
    fc_cli_warn(NULL, "the GPU could not be started (%s): the CPU computed the job",
                st.fell_back_why);
    resolved.kind = FC_DEVICE_CPU;
    fc_device_name(&resolved, device_name, sizeof device_name);
  }

  int code = FC_EXIT_OK;
  uint64_t ok = st.processed + st.skipped_existing;
  /* Failed inputs are recorded in the store; --max-failed says how many the job tolerates. */
  int allowed = !rc && fc_cli_failed_allowed(&max_failed, st.failed, st.total);
  if (rc == FC_EINTR && check) {
    fc_cli_check_interrupted("input", st.total, st.skipped_existing, st.not_stored, st.failed,
                             st.not_started);
    code = fc_cli_signal_exit();
  } else if (rc == FC_EINTR) {
    fprintf(stderr, "%s: interrupted: %llu of %llu done", fc_cli_tool, (unsigned long long)ok,
            (unsigned long long)st.total);
    if (st.failed) fprintf(stderr, " (%llu failed)", (unsigned long long)st.failed);
    if (st.not_started) fprintf(stderr, ", %llu not started", (unsigned long long)st.not_started);
    fputs(", finished work committed\n", stderr);
    code = fc_cli_signal_exit();
  } else if (rc == FC_ECONFIG || rc == FC_ENODEVICE) {
    fc_cli_warn(NULL, "%s", why[0] ? why : fc_strerror(rc));
    code = FC_EXIT_USAGE;
    if (!st.processed) { /* refused before any work */
      fc_cli_failures_free(&rctx.failures);
      fzc_explain_duplicates(&rctx);
      return code;
    } /* the device failed to start while the CPU computed (hybrid start): what is stored, said */
  } else if (rc && st.manifest_stopped) { /* its own line, not the store's; the done line counts */
    fc_cli_warn(NULL, "%s; the %s stopped there, the lines before it %s", why,
                check ? "check" : "run", check ? "checked" : "stored");
    code = FC_EXIT_FAIL;
  } else if (rc && (why[0] || !strict)) { /* a failed commit (strict item errors leave why empty) */
    fc_cli_warn(store_dir, "%s%s", why[0] ? why : fc_strerror(rc), fc_cli_room_hint(rc));
    code = FC_EXIT_FAIL;
  } else if (check &&
             st.not_stored) { /* what is missing cannot be written: as the open's refusal */
    code = FC_EXIT_USAGE;
  } else if (rc || !allowed) {
    code = FC_EXIT_FAIL;
  }
  fzc_unsaid_unstored(&rctx);
  if (st.failed > rctx.failed_lines + (uint64_t)st.manifest_stopped) /* after a failed commit, or
    a device that did not start: one line for the items never begun */
    fprintf(stderr, "%s: %llu inputs not started after the %s, counted as failed\n", fc_cli_tool,
            (unsigned long long)(st.failed - rctx.failed_lines - (uint64_t)st.manifest_stopped),
            code == FC_EXIT_USAGE ? "device failed to start" : "failed write");
  fzc_explain_duplicates(&rctx);
  const uint64_t said = verbose || rctx.not_stored_lines < FC_CLI_NOT_STORED_SAID
                            ? rctx.not_stored_lines
                            : FC_CLI_NOT_STORED_SAID; /* a check's inputs not stored, named */
  if (check && rc != FC_EINTR && st.total) {
    fc_cli_check_summary(store_dir, "input", st.total, st.skipped_existing, st.not_stored, said,
                         st.failed, write_err, &max_failed, allowed, quiet);
  } else if (rc != FC_EINTR) {
    if (code == FC_EXIT_OK && st.total == 0) { /* an empty list (the wrong one?): as tokenize */
      if (!quiet)
        fzc_empty_input(manifest, from_stdin ? 0 : nargs, shard_spec ? shard_k : 0,
                        shard_spec ? shard_n : 0);
    } else if (code == FC_EXIT_OK && st.total > 0 && st.skipped_existing == st.total) {
      if (!quiet)
        fprintf(stderr, "%s: nothing to do: all %llu already stored\n", fc_cli_tool,
                (unsigned long long)st.total);
    } else if (code != FC_EXIT_OK || st.failed || !quiet) {
      fprintf(stderr, "%s: done: %llu of %llu (%llu new, %llu already stored, %llu failed",
              fc_cli_tool, (unsigned long long)ok, (unsigned long long)st.total,
              (unsigned long long)st.processed, (unsigned long long)st.skipped_existing,
              (unsigned long long)st.failed);
      if (st.failed && !rc && max_failed.text[0])
        fprintf(stderr, ", %s --max-failed %s", allowed ? "allowed by" : "more than",
                max_failed.text);
      fputc(')', stderr);
      if (strict && rc && !why[0]) fputs(", stopped at the first failure (--strict)", stderr);
      if (st.manifest_stopped) /* its failed line counted: N of M tells a script */
        fputs(", stopped at a manifest line it could not read, the lines after it not read",
              stderr);
      if (st.not_started) fprintf(stderr, ", %llu not started", (unsigned long long)st.not_started);
      fputc('\n', stderr);
      if (st.cpu_computed && resolved.kind != FC_DEVICE_CPU) /* "Hybrid start" */
        fprintf(stderr,
                "%s: %llu computed on the CPU (while the device started, or longer than a "
                "staging chunk)\n",
                fc_cli_tool, (unsigned long long)st.cpu_computed);
    }
  }
  if (verbose) {
    fzc_print_stages(&st);
    if (st.failures_recorded || st.failures_cleared)
      fprintf(stderr, "%s: failure records: %llu written, %llu deleted (stored now)\n", fc_cli_tool,
              (unsigned long long)st.failures_recorded, (unsigned long long)st.failures_cleared);
  }
  if (json)
    fzc_print_json(&st, &cfg, check ? "none" : device_name, store_dir, &rctx, &max_failed,
                   code == FC_EXIT_OK);
  fc_cli_failures_free(&rctx.failures);
  return fc_cli_stdout_status(code); /* the --json object lost is a failure */
}
