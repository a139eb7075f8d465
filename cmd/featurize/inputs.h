/* featurize's checks of its inputs before the store is touched (cmd/featurize/inputs.c): a
 * manifest that is none, an LJSpeech manifest's audio folder that is not there; the folder of a new
 * store that is not there. */
#ifndef FC_CMD_FEATURIZE_INPUTS_H
#define FC_CMD_FEATURIZE_INPUTS_H
#include "cmd/cli.h"

#include "featcache/fc_manifest.h"

/* Does the first line of the list or manifest l was read from hold a NUL byte? Then it is no list
 * of paths or manifest, but an audio file's bytes (`--manifest a.wav`, `featurize -o S - <
 * a.wav`), UTF-16 text or find -print0's names. */
int fzc_first_line_has_nul(const fc_item_list *l);
/* Says why a manifest whose first line holds a NUL byte is none and exits 2. is_file: manifest is
 * a regular file, whose first bytes tell UTF-16 text apart (a pipe's are read already). */
_Noreturn void fzc_refuse_nul_manifest(const char *manifest, int is_file);
/* Without --audio-dir an LJSpeech manifest's audio is in wavs/ beside it (as the reader makes its
 * paths): a folder that is not there fails every input, each with a failure record in the store —
 * a configuration error, as an --audio-dir that is not there is. Exits 2 then. */
void fzc_check_ljspeech_wavs(const char *manifest, const fc_item_list *items);
/* A Kaldi `text` file (an utterance id, a space, its words) detected as a path list: its first
 * line is a word without '/' or an audio extension, then more words without them, and names no
 * file. Each line would fail as a missing file, each with a failure record: says what the file is
 * and what to give instead, and exits 2. audio_dir: --audio-dir or NULL. A list the user forced
 * (--manifest-format list) is not looked at. */
void fzc_check_kaldi_text(const char *manifest, const char *audio_dir, const fc_item_list *items);
/* An LJSpeech manifest's audio is wavs/<id>.wav; a corpus converted to FLAC (or MP3, Ogg, Opus)
 * keeps the layout with other files. When the first id's .wav is not there and its file of one of
 * those extensions is, every path's .wav becomes that extension, and so does the reader's
 * audio_ext in *mo (a manifest read as the job goes); -v says so. Out of memory exits 2, before
 * the store is touched. */
void fzc_ljspeech_audio_ext(const char *manifest, fc_item_list *items, fc_manifest_opts *mo,
                            int verbose);
/* A manifest's relative audio paths are read from its folder (without --audio-dir); a Kaldi
 * wav.scp's are the recipe's, relative to the working directory, as Kaldi reads them. When the
 * first item's file is not there but the same line read from the working directory is, every
 * input would fail: says so, and to give --audio-dir ., and exits 2. A manifest file read as the
 * job goes (regular: read again for its first item) or a pipe (read whole: its folder, /dev/fd
 * for <(grep ...), taken off the first item's path), not an LJSpeech one (wavs/). */
void fzc_check_cwd_relative(const char *manifest, const fc_manifest_opts *mo,
                            const fc_item_list *items);
/* A manifest piped to '-' (cat wav.scp | featurize -o S -), read as a list of paths: each line
 * would fail as a file of that whole name, with a failure record under an id made of it. When the
 * first line names no file and reads as a wav.scp, LJSpeech or JSON lines manifest's (or a Kaldi
 * text file's), says so and to give it as --manifest -, and exits 2. */
void fzc_check_stdin_list(const fc_item_list *items);
/* A JSON lines manifest of segments (NeMo's "offset" and "duration" into one recording): featurize
 * stores whole files, so each line would store the whole recording's features under its
 * segment's id. A nonzero "offset" among the first 1000 lines of a manifest file says so, names
 * its line and what to do, and exits 2 ("offset": 0 alone is a whole file). The job holds every
 * line to the same as it reads its file (a nonzero offset, a duration shorter than the file: that
 * line fails). */
void fzc_check_segments(const char *manifest, const fc_item_list *items);
/* A JSON lines manifest whose first line holds "id" and "text" but no "audio_filepath" (tokenize's
 * JSON lines, a transcript), or whose first line lacks "audio_filepath" and is no transcript's
 * (its audio under another key, "path": an export): each line would fail for want of audio, each
 * with a failure record. Says so, naming the manifest as name (its lines' name: "(stdin)" for
 * "-"), and exits 2. */
void fzc_check_jsonl_transcript(const char *name, const fc_item_list *items);
/* The same for a manifest on stdin or in a pipe ("-", /dev/stdin, /dev/fd/N: <(jq ... m.jsonl)),
 * whose lines the reader reads once: its first 1000 lines are read here (a file on stdin from
 * where it stands, read again by the reader) and, from a pipe, handed on before the rest by a
 * pipe put in its place (fd 0, or N) and a thread that copies. name: the manifest as said
 * ("(stdin)"); format: --manifest-format's (not JSON lines: nothing looked at). A named FIFO is
 * not looked at. Exits 2 as fzc_check_segments does, or when the pipe cannot be handed on. */
void fzc_check_piped_segments(const char *manifest, const char *name, int format);
/* A Kaldi data folder whose `segments` file cuts the wav.scp's recordings into utterances: the
 * recordings are stored whole, under their ids, which a user who meant the utterances learns
 * from a line here (not with -q) rather than from hours-long records. */
void fzc_warn_kaldi_segments(const char *manifest, const fc_item_list *items, int quiet);
/* A comma-separated .csv (Hugging Face's audiofolder metadata, file_name,transcription) read as
 * LJSpeech by its name: every line would fail for want of its bar. When the first two lines of
 * the manifest file hold commas and no bar, says so and what to give instead, and exits 2. */
void fzc_check_comma_csv(const char *manifest, const fc_item_list *items);
/* Is the folder a store at path would be made in missing (-o cache/hifigan before mkdir cache)?
 * Then 1, with its name (quoted as names are) in buf. */
int fzc_store_folder_missing(const char *store, char *buf, size_t len);
/* Is the store at path a symbolic link to something not there (cache -> /scratch/u/cache before
 * that was made)? Then 1, with the link's target (from the link's folder when relative, quoted as
 * names are) in buf. */
int fzc_store_dangling_link(const char *store, char *buf, size_t len);
/* What to give instead of a folder as --manifest (rc EISDIR): " (its manifest: --manifest
 * DIR/metadata.csv)" when the folder holds a manifest of a known name (metadata.csv, wav.scp,
 * manifest.jsonl, manifest.json), else how to list a folder of audio; "" for any other rc. buf. */
const char *fzc_manifest_dir_hint(const char *manifest, int rc, char *buf, size_t len);
/* The first max items of the manifest at path (read with mo, as the job will): what the device
 * and the writers are chosen from when the job reads the manifest as it goes. 0, or the reader's
 * error with why; free out with fc_item_list_free. */
int fzc_first_items(const char *path, const fc_manifest_opts *mo, size_t max, fc_item_list *out,
                    char *why, size_t why_len);
/* jobs, or as many workers as the open-file limit leaves room for: each holds the file it reads
 * open, each of the store's n_parts three descriptors. The soft limit is raised first, at most to
 * the hard one; fewer workers are said unless quiet (past the limit, inputs failed "Too many open
 * files", a line each). */
uint32_t fzc_jobs_for_fds(uint32_t jobs, unsigned n_parts, int quiet);
#endif
