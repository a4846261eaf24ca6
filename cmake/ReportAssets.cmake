# The report's plotting library (Vega, Vega-Lite, vega-embed) from npm, pinned by
# src/report/js/package-lock.json, installed into ${CMAKE_BINARY_DIR}/report-js at configure time
# and inlined into peakcast_report by src/report/assets.cpp (docs/report.md says why).
# Sets PEAKCAST_REPORT_JS_DIR and PEAKCAST_HAVE_REPORT_JS. Without npm (or offline with an empty
# npm cache) the build goes on and `peakcast report` says what is missing.
set(PEAKCAST_REPORT_JS_DIR ${CMAKE_BINARY_DIR}/report-js)
set(_pc_js_src ${PROJECT_SOURCE_DIR}/src/report/js)
set(_pc_js_files vega/build/vega.min.js vega-lite/build/vega-lite.min.js vega-embed/build/vega-embed.min.js)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_pc_js_src}/package.json ${_pc_js_src}/package-lock.json)

set(_pc_js_stamp ${PEAKCAST_REPORT_JS_DIR}/installed-lock.json)
set(_pc_js_fresh FALSE)
if(EXISTS ${_pc_js_stamp})
  file(SHA256 ${_pc_js_stamp} _pc_have)
  file(SHA256 ${_pc_js_src}/package-lock.json _pc_want)
  if(_pc_have STREQUAL _pc_want)
    set(_pc_js_fresh TRUE)
  endif()
endif()
if(NOT _pc_js_fresh)
  find_program(PEAKCAST_NPM npm)
  if(PEAKCAST_NPM)
    message(STATUS "report: npm ci (Vega, Vega-Lite, vega-embed) into ${PEAKCAST_REPORT_JS_DIR}")
    file(MAKE_DIRECTORY ${PEAKCAST_REPORT_JS_DIR})
    file(COPY ${_pc_js_src}/package.json ${_pc_js_src}/package-lock.json DESTINATION ${PEAKCAST_REPORT_JS_DIR})
    execute_process(COMMAND ${PEAKCAST_NPM} ci --ignore-scripts --no-audit --no-fund --loglevel=error
                    WORKING_DIRECTORY ${PEAKCAST_REPORT_JS_DIR}
                    RESULT_VARIABLE _pc_npm_rc OUTPUT_VARIABLE _pc_npm_out ERROR_VARIABLE _pc_npm_out)
    if(_pc_npm_rc EQUAL 0)
      configure_file(${_pc_js_src}/package-lock.json ${_pc_js_stamp} COPYONLY)
    else()
      message(WARNING "report: npm ci failed (${_pc_npm_rc}); peakcast report will be unavailable:\n${_pc_npm_out}")
    endif()
  else()
    message(WARNING "report: npm not found (scripts/install-deps.sh installs it); peakcast report will be unavailable")
  endif()
endif()

set(PEAKCAST_HAVE_REPORT_JS 1)
set(PEAKCAST_REPORT_JS_FILES "")
foreach(f ${_pc_js_files})
  if(NOT EXISTS ${PEAKCAST_REPORT_JS_DIR}/node_modules/${f})
    set(PEAKCAST_HAVE_REPORT_JS 0)
  endif()
  list(APPEND PEAKCAST_REPORT_JS_FILES ${PEAKCAST_REPORT_JS_DIR}/node_modules/${f})
endforeach()

# The licence texts of what the page carries: the three packages and everything npm installed
# beside them (what their browser builds bundle -- d3, semver, fast-json-patch, tslib, ... -- is a
# subset; type definitions left out), identical texts once with every package that has it. Their
# licences (BSD-3-Clause, ISC, MIT, 0BSD) ask that the notice travel with each copy: the page
# shows it (src/report/html.cpp), so the binary that writes it carries it too.
set(PEAKCAST_REPORT_NOTICES ${PEAKCAST_REPORT_JS_DIR}/third-party-notices.txt)
if(PEAKCAST_HAVE_REPORT_JS)
  file(GLOB _pc_pkgs LIST_DIRECTORIES true ${PEAKCAST_REPORT_JS_DIR}/node_modules/*
       ${PEAKCAST_REPORT_JS_DIR}/node_modules/@*/*)
  list(SORT _pc_pkgs)
  set(_pc_keys "")
  foreach(dir ${_pc_pkgs})
    if(NOT EXISTS ${dir}/package.json OR dir MATCHES "/node_modules/@types/")
      continue()
    endif()
    file(GLOB _pc_lic ${dir}/LICENSE* ${dir}/LICENCE* ${dir}/license* ${dir}/licence* ${dir}/COPYING*)
    file(READ ${dir}/package.json _pc_pj)
    string(JSON _pc_name ERROR_VARIABLE _e GET "${_pc_pj}" name)
    string(JSON _pc_ver ERROR_VARIABLE _e GET "${_pc_pj}" version)
    if(NOT _pc_lic)
      string(JSON _pc_spdx ERROR_VARIABLE _e GET "${_pc_pj}" license)
      message(WARNING "report: ${_pc_name} ${_pc_ver} ships no licence file (package.json: ${_pc_spdx})")
      continue()
    endif()
    list(SORT _pc_lic)
    list(GET _pc_lic 0 _pc_file)
    file(READ ${_pc_file} _pc_text)
    string(STRIP "${_pc_text}" _pc_text)
    string(SHA256 _pc_key "${_pc_text}")
    if(NOT DEFINED _pc_text_${_pc_key})
      set(_pc_text_${_pc_key} "${_pc_text}")
      list(APPEND _pc_keys ${_pc_key})
    endif()
    list(APPEND _pc_who_${_pc_key} "${_pc_name} ${_pc_ver}")
  endforeach()
  set(_pc_notices "Licences of the plotting library this page carries (Vega, Vega-Lite and vega-embed, with the\npackages npm installed beside them), each text once with the packages that ship it.\n")
  foreach(k ${_pc_keys})
    string(REPLACE ";" ", " _pc_names "${_pc_who_${k}}")
    string(APPEND _pc_notices "\n== ${_pc_names} ==\n\n${_pc_text_${k}}\n")
  endforeach()
  # Written only when it changed, so a configure does not rebuild the report's assets (not with
  # configure_file: its input would become a configure dependency, re-running CMake every build).
  set(_pc_old "")
  if(EXISTS ${PEAKCAST_REPORT_NOTICES})
    file(READ ${PEAKCAST_REPORT_NOTICES} _pc_old)
  endif()
  if(NOT _pc_old STREQUAL _pc_notices)
    file(WRITE ${PEAKCAST_REPORT_NOTICES} "${_pc_notices}")
  endif()
endif()

# The versions shown in the page come from the lock file.
file(READ ${_pc_js_src}/package-lock.json _pc_lock)
foreach(pkg vega vega-lite vega-embed)
  string(JSON _v ERROR_VARIABLE _e GET "${_pc_lock}" packages "node_modules/${pkg}" version)
  string(TOUPPER "${pkg}" _u)
  string(REPLACE "-" "_" _u "${_u}")
  set(PEAKCAST_${_u}_VERSION "${_v}")
endforeach()

function(peakcast_report_assets target)
  target_compile_definitions(${target} PRIVATE
    PEAKCAST_HAVE_REPORT_JS=${PEAKCAST_HAVE_REPORT_JS}
    PEAKCAST_REPORT_JS_DIR="${PEAKCAST_REPORT_JS_DIR}"
    PEAKCAST_REPORT_NOTICES="${PEAKCAST_REPORT_NOTICES}"
    PEAKCAST_VEGA_VERSION="${PEAKCAST_VEGA_VERSION}"
    PEAKCAST_VEGA_LITE_VERSION="${PEAKCAST_VEGA_LITE_VERSION}"
    PEAKCAST_VEGA_EMBED_VERSION="${PEAKCAST_VEGA_EMBED_VERSION}")
  if(PEAKCAST_HAVE_REPORT_JS)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/src/report/assets.cpp PROPERTIES
                                OBJECT_DEPENDS "${PEAKCAST_REPORT_JS_FILES};${PEAKCAST_REPORT_NOTICES}")
  endif()
endfunction()
