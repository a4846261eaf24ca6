// The plotting library, inlined into the binary at build time (cmake/ReportAssets.cmake installs
// the pinned npm packages of src/report/js into the build folder; the assembler's .incbin copies
// the minified browser builds here), so that `peakcast report` writes pages that open offline.
#include "report_internal.h"

#if PEAKCAST_HAVE_REPORT_JS
#define PEAKCAST_INCBIN(sym, file)                                                \
  ".section .rodata\n"                                                            \
  ".global " sym "\n"                                                             \
  ".balign 16\n" sym ":\n"                                                        \
  ".incbin \"" PEAKCAST_REPORT_JS_DIR "/node_modules/" file "\"\n"                \
  ".global " sym "_end\n" sym "_end:\n"                                           \
  ".byte 0\n"                                                                     \
  ".previous\n"

__asm__(PEAKCAST_INCBIN("peakcast_vega_js", "vega/build/vega.min.js")
        PEAKCAST_INCBIN("peakcast_vega_lite_js", "vega-lite/build/vega-lite.min.js")
        PEAKCAST_INCBIN("peakcast_vega_embed_js", "vega-embed/build/vega-embed.min.js")
        ".section .rodata\n"
        ".global peakcast_report_notices\n"
        "peakcast_report_notices:\n"
        ".incbin \"" PEAKCAST_REPORT_NOTICES "\"\n"
        ".global peakcast_report_notices_end\n"
        "peakcast_report_notices_end:\n"
        ".byte 0\n"
        ".previous\n");

extern "C" const char peakcast_vega_js[], peakcast_vega_js_end[];
extern "C" const char peakcast_vega_lite_js[], peakcast_vega_lite_js_end[];
extern "C" const char peakcast_vega_embed_js[], peakcast_vega_embed_js_end[];
extern "C" const char peakcast_report_notices[], peakcast_report_notices_end[];
#endif

namespace peakcast::report {

bool have_plotting_library() { return PEAKCAST_HAVE_REPORT_JS != 0; }

std::vector<Asset> plotting_library() {
#if PEAKCAST_HAVE_REPORT_JS
  return {
      {"vega " PEAKCAST_VEGA_VERSION, std::string_view(peakcast_vega_js, static_cast<size_t>(peakcast_vega_js_end - peakcast_vega_js))},
      {"vega-lite " PEAKCAST_VEGA_LITE_VERSION, std::string_view(peakcast_vega_lite_js, static_cast<size_t>(peakcast_vega_lite_js_end - peakcast_vega_lite_js))},
      {"vega-embed " PEAKCAST_VEGA_EMBED_VERSION, std::string_view(peakcast_vega_embed_js, static_cast<size_t>(peakcast_vega_embed_js_end - peakcast_vega_embed_js))},
  };
#else
  return {};
#endif
}

std::string_view plotting_library_notices() {
#if PEAKCAST_HAVE_REPORT_JS
  return {peakcast_report_notices, static_cast<size_t>(peakcast_report_notices_end - peakcast_report_notices)};
#else
  return {};
#endif
}

}  // namespace peakcast::report
