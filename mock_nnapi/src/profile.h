// SPDX-License-Identifier: Apache-2.0
// Device profiles: a phone described as a set of NNAPI devices (docs/device-profiles.md).
//
// A profile is a JSON file. Built-in profiles (mock_nnapi/profiles/*.json) are embedded in the
// library at build time and also installed next to it; a name is looked up, in order, in
// $MOCK_NNAPI_PROFILE_DIR, in the "profiles" directory next to the installed library, then
// among the embedded copies. Anything containing a '/' or ending in ".json" is a file path.
#ifndef MOCK_NNAPI_SRC_PROFILE_H_
#define MOCK_NNAPI_SRC_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device.h"

namespace mock_nnapi {

// The profile used when none is selected.
constexpr char kDefaultProfileName[] = "reference";
// Environment: the profile to start with, and a directory searched first for profile names.
constexpr char kProfileEnvironmentVariable[] = "MOCK_NNAPI_PROFILE";
constexpr char kProfileDirectoryEnvironmentVariable[] = "MOCK_NNAPI_PROFILE_DIR";

struct Profile {
  std::string name;
  std::string description;
  // Where the profile came from: a file path or "built-in".
  std::string origin;
  std::string json_text;
  int64_t runtime_feature_level = kFeatureLevel8;
  double runtime_overhead_us = 0;
  std::vector<std::unique_ptr<Device>> devices;
};

// A profile compiled into the library (generated from mock_nnapi/profiles/*.json).
struct EmbeddedProfile {
  const char* name;
  const char* json;
};

// Parses and validates a profile. `origin` starts every error message, which then names the
// offending field: "<origin>: devices[1].throughput.float16: expected a positive number".
bool ParseProfile(const std::string& text, const std::string& origin, Profile* profile,
                  std::string* error);
// Finds (see above), reads and parses a profile.
bool LoadProfile(const std::string& name_or_path, Profile* profile, std::string* error);
// Names of the profiles LoadProfile finds by name, sorted.
std::vector<std::string> AvailableProfileNames();

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_PROFILE_H_
